// Starts Swagger UI on /docs over the server's own /openapi.json (vecgrid/http/docs_page.py).
// Everything it loads comes from this server: no validator badge, no remote URLs.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    displayRequestDuration: true,
    persistAuthorization: true,
    tryItOutEnabled: false,
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    docExpansion: "list",
    filter: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
