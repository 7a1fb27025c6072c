// The official Feathers v5 client (rest-client over fetch + authentication-client) against a
// running conformance app: `node conformance.mjs http://127.0.0.1:PORT`.
// tests/test_conformance_app.py installs the pinned packages next to a copy of this script and runs
// it; the last line of stdout is a JSON summary {passed, failed: [{name, error}]}; exit code 1 on any
// failure.
import assert from 'node:assert/strict'
import { feathers } from '@feathersjs/feathers'
import rest from '@feathersjs/rest-client'
import authentication from '@feathersjs/authentication-client'
import { BadRequest, FeathersError, MethodNotAllowed, NotAuthenticated, NotFound } from '@feathersjs/errors'

const url = process.argv[2]
if (!url) {
  console.error('usage: node conformance.mjs <base url>')
  process.exit(2)
}

const connection = rest(url).fetch(fetch)
const app = feathers()
app.configure(connection)
app.configure(authentication())
app.use('echo', connection.service('echo'), { methods: ['find', 'get', 'create', 'echo', 'nothing'] })
app.use('secure-echo', connection.service('secure-echo'), { methods: ['find', 'echo'] })

const checks = []
const check = (name, fn) => checks.push({ name, fn })

// Asserts that `promise` rejects with the rebuilt Feathers class and the exact message.
async function rejects (promise, ErrorClass, message, data) {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof ErrorClass, `expected ${ErrorClass.name}, got ${error && error.name}: ${error && error.message}`)
    assert.ok(error instanceof FeathersError)
    assert.equal(error.name, new ErrorClass().name)
    assert.equal(error.code, new ErrorClass().code)
    assert.equal(error.className, new ErrorClass().className)
    if (message !== undefined) assert.equal(error.message, message)
    if (data !== undefined) assert.deepEqual(error.data, data)
    return error
  }
  assert.fail(`expected a ${ErrorClass.name}`)
}

const people = app.service('people')
const paginated = app.service('people-paginated')
const small = app.service('people-paginated-small')
const customid = app.service('people-customid-paginated')

check('create, get, find, update, patch, remove', async () => {
  const doug = await people.create({ name: 'Doug', age: 32 })
  assert.deepEqual(doug, { name: 'Doug', age: 32, id: 0 })
  assert.deepEqual(await people.get(0), doug)
  assert.deepEqual(await people.get('0'), doug)
  assert.deepEqual(await people.find(), [doug])
  assert.deepEqual(await people.update(0, { name: 'Douglas', id: 9 }), { name: 'Douglas', id: 0 })
  assert.deepEqual(await people.patch(0, { age: 33 }), { name: 'Douglas', age: 33, id: 0 })
  assert.deepEqual(await people.remove(0), { name: 'Douglas', age: 33, id: 0 })
  assert.deepEqual(await people.find(), [])
})

check('multi create, patch and remove on a paginated view', async () => {
  const made = await paginated.create([{ name: 'A', age: 1 }, { name: 'B', age: 2 }, { name: 'C', age: 2 }])
  assert.deepEqual(made.map((r) => r.name), ['A', 'B', 'C'])
  assert.deepEqual(await paginated.create([]), [])
  const patched = await paginated.patch(null, { team: 'two' }, { query: { age: 2, $limit: 1 } })
  assert.deepEqual(patched.map((r) => r.name).sort(), ['B', 'C'])
  assert.ok(patched.every((r) => r.team === 'two'))
  const removed = await paginated.remove(null, { query: { age: 2 } })
  assert.deepEqual(removed.map((r) => r.name).sort(), ['B', 'C'])
  assert.deepEqual((await people.find()).map((r) => r.name), ['A'])
  await paginated.remove(null)
})

check('pagination pages, caps and count-only pages', async () => {
  await paginated.create(Array.from({ length: 120 }, (_, i) => ({ name: `n${String(i).padStart(3, '0')}`, age: i % 7 })))
  const page = await paginated.find()
  assert.deepEqual(Object.keys(page).sort(), ['data', 'limit', 'skip', 'total'])
  assert.equal(page.total, 120); assert.equal(page.limit, 10); assert.equal(page.skip, 0); assert.equal(page.data.length, 10)
  const capped = await paginated.find({ query: { $limit: 1000 } })
  assert.equal(capped.limit, 100); assert.equal(capped.data.length, 100)
  assert.deepEqual(await paginated.find({ query: { $limit: 0 } }), { total: 120, limit: 0, skip: 0, data: [] })
  assert.deepEqual(await paginated.find({ query: { $skip: 500 } }), { total: 120, limit: 10, skip: 500, data: [] })
  const sorted = await paginated.find({ query: { $skip: 1, $sort: { name: -1 } } })
  assert.equal(sorted.skip, 1); assert.equal(sorted.data[0].name, 'n118')
  const tiny = await small.find({ query: { $limit: 50 } })
  assert.equal(tiny.limit, 2); assert.equal(tiny.data.length, 2); assert.equal(tiny.total, 120)
  assert.equal((await people.find()).length, 120)
  assert.equal((await paginated.remove(null)).length, 120)
})

check('query syntax with schema coercion', async () => {
  const [doug, alice] = await paginated.create([
    { name: 'Doug', age: 32, created: true }, { name: 'Alice', age: 25, created: false },
    { name: 'Bob', age: 40, created: true }])
  const names = async (query) => (await people.find({ query })).map((r) => r.name)
  assert.deepEqual(await names({ age: 32 }), ['Doug'])
  assert.deepEqual(await names({ created: true }), ['Doug', 'Bob'])
  assert.deepEqual(await names({ name: { $in: ['Alice', 'Bob'] } }), ['Alice', 'Bob'])
  assert.deepEqual(await names({ age: { $nin: [25, 40] } }), ['Doug'])
  assert.deepEqual(await names({ age: { $gt: 25, $lte: 40 }, $sort: { age: -1 } }), ['Bob', 'Doug'])
  assert.deepEqual(await names({ age: { $ne: 32 } }), ['Alice', 'Bob'])
  assert.deepEqual(await names({ $or: [{ name: 'Alice' }, { age: { $gte: 40 } }] }), ['Alice', 'Bob'])
  assert.deepEqual(await names({ $and: [{ created: true }, { age: { $lt: 35 } }] }), ['Doug'])
  assert.deepEqual(await people.find({ query: { $select: ['name'], $limit: 1 } }), [{ id: doug.id, name: 'Doug' }])
  assert.deepEqual(await people.get(alice.id, { query: { $select: ['age'] } }), { id: alice.id, age: 25 })
  assert.deepEqual(await names({ id: { $in: [doug.id, alice.id] } }), ['Doug', 'Alice'])
  const error = await rejects(people.find({ query: { age: 'abc' } }), BadRequest, 'validation failed')
  assert.ok(Array.isArray(error.data) && error.data[0].instancePath === '/age')
  await rejects(people.find({ query: { $foo: 1 } }), BadRequest, 'Invalid filter value $foo')
  await rejects(people.find({ query: { name: { $like: 'x' } } }), BadRequest, 'Invalid query parameter $like', { $like: 'x' })
  await rejects(people.get(doug.id, { query: { name: 'Other' } }), NotFound, `No record found for id '${doug.id}'`)
  await paginated.remove(null)
})

check('custom id field', async () => {
  const made = await customid.create([{ name: 'x' }, { customid: 9, name: 'nine' }])
  assert.deepEqual(made, [{ name: 'x', customid: 0 }, { customid: 9, name: 'nine' }])
  assert.deepEqual(await app.service('people-customid').get(9, { query: { $select: ['name'] } }), { customid: 9, name: 'nine' })
  assert.equal((await customid.remove(null)).length, 2)
})

check('errors are rebuilt as their Feathers classes', async () => {
  await rejects(people.get(999), NotFound, "No record found for id '999'")
  await rejects(people.create([{ name: 'x' }]), MethodNotAllowed, 'Can not create multiple entries')
  await rejects(people.patch(null, { name: 'x' }), MethodNotAllowed, 'Can not patch multiple entries')
  await rejects(people.remove(null), MethodNotAllowed, 'Can not remove multiple entries')
  await rejects(people.update(null, { name: 'x' }), BadRequest, "You can not replace multiple instances. Did you mean 'patch'?")
  await rejects(app.service('nope').find(), NotFound, 'Path /nope not found')
  await rejects(app.service('echo').update(1, {}), MethodNotAllowed, 'Method `update` is not supported by this endpoint.')
  assert.deepEqual(await people.find(), [])
})

check('custom methods', async () => {
  const echo = app.service('echo')
  assert.deepEqual(await echo.echo({ x: [1, 2] }, { query: { a: 1, b: { c: 'd' } } }),
    { method: 'echo', data: { x: [1, 2] }, query: { a: '1', b: { c: 'd' } }, route: {}, provider: 'rest' })
  assert.equal(await echo.nothing({}), null)
  assert.deepEqual(await echo.find({ query: { $limit: 2, name: { $in: ['A', 'B'] } } }),
    { method: 'find', query: { $limit: '2', name: { $in: ['A', 'B'] } }, route: {}, provider: 'rest' })
  assert.deepEqual(await echo.get('a b'), { method: 'get', id: 'a%20b', query: {} })
  assert.deepEqual(await echo.create({ y: 1 }), { method: 'create', data: { y: 1 }, query: {} })
})

check('route placeholders', async () => {
  const messages = app.service('users/:userId/messages')
  const mine = await messages.create({ text: 'hi' }, { route: { userId: '7' } })
  assert.deepEqual(mine, { text: 'hi', userId: '7', id: 0 })
  const theirs = await messages.create({ text: 'yo' }, { route: { userId: '8' } })
  assert.deepEqual(await messages.find({ route: { userId: '7' } }), [mine])
  assert.deepEqual(await messages.get(0, { route: { userId: '7' } }), mine)
  await rejects(messages.get(theirs.id, { route: { userId: '7' } }), NotFound, `No record found for id '${theirs.id}'`)
  assert.deepEqual(await messages.patch(0, { text: 'edited' }, { route: { userId: '7' } }), { text: 'edited', userId: '7', id: 0 })
  assert.deepEqual(await messages.remove(theirs.id, { route: { userId: '8' } }), theirs)
})

check('authentication: sign up, login, reAuthenticate, protected calls, logout', async () => {
  const users = app.service('users')
  const secure = app.service('secure-echo')
  await rejects(secure.find(), NotAuthenticated, 'Not authenticated')
  const user = await users.create({ email: 'js@example.com', password: 'js-secret-1' })
  assert.deepEqual(user, { email: 'js@example.com', id: 0 })
  await rejects(app.authenticate({ strategy: 'local', email: 'js@example.com', password: 'wrong' }),
    NotAuthenticated, 'Invalid login')
  await rejects(app.authenticate({ strategy: 'local', email: 'nobody@example.com', password: 'js-secret-1' }),
    NotAuthenticated, 'Invalid login')
  const login = await app.authenticate({ strategy: 'local', email: 'js@example.com', password: 'js-secret-1' })
  assert.equal(typeof login.accessToken, 'string')
  assert.deepEqual(login.user, { email: 'js@example.com', id: 0 })
  assert.equal(login.authentication.strategy, 'local')
  assert.equal(login.authentication.payload.sub, '0')
  assert.equal(login.authentication.payload.exp - login.authentication.payload.iat, 86400)
  assert.equal(await app.authentication.getAccessToken(), login.accessToken)
  // calls now carry Authorization: Bearer <token>
  assert.deepEqual(await secure.echo({ z: 1 }), { method: 'echo', data: { z: 1 }, query: {}, route: {}, provider: 'rest' })
  const page = await users.find()
  assert.equal(page.total, 1); assert.deepEqual(page.data, [{ email: 'js@example.com', id: 0 }])
  assert.deepEqual(await users.patch(0, { name: 'JS' }), { email: 'js@example.com', id: 0, name: 'JS' })
  const again = await app.reAuthenticate(true)
  assert.equal(again.accessToken, login.accessToken)
  assert.equal(again.authentication.strategy, 'jwt')
  assert.deepEqual(again.user, { email: 'js@example.com', id: 0, name: 'JS' })
  const out = await app.logout()
  assert.equal(out.accessToken, login.accessToken)
  assert.equal(await app.authentication.getAccessToken(), null)
  await rejects(secure.find(), NotAuthenticated, 'Not authenticated')
  await rejects(users.get(0), NotAuthenticated, 'Not authenticated')
  // the logged-out token itself is refused now
  await rejects(app.authenticate({ strategy: 'jwt', accessToken: login.accessToken }), NotAuthenticated)
  await rejects(app.authenticate({ strategy: 'jwt', accessToken: 'not-a-jwt' }), NotAuthenticated, 'jwt malformed',
    { name: 'JsonWebTokenError' })
  await rejects(app.authenticate({ email: 'js@example.com', password: 'js-secret-1' }), NotAuthenticated,
    'Invalid authentication information (no `strategy` set)')
  const fresh = await app.authenticate({ strategy: 'local', email: 'js@example.com', password: 'js-secret-1' })
  assert.notEqual(fresh.accessToken, login.accessToken)
  assert.equal((await users.get(0)).name, 'JS')
  await app.logout()
})

const failed = []
let passed = 0
for (const { name, fn } of checks) {
  try {
    await fn()
    passed += 1
    console.log(`ok - ${name}`)
  } catch (error) {
    failed.push({ name, error: String(error && error.stack ? error.stack : error) })
    console.log(`not ok - ${name}: ${error && error.message}`)
  }
}
console.log(JSON.stringify({ passed, total: checks.length, failed }))
process.exit(failed.length ? 1 : 0)
