"""A Feathers v5 style service framework on Tornado: errors, the application object, the REST transport."""
