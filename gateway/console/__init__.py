"""The web console: a browser front end the gateway serves at /console/, so a server needs nothing installed
beside it to be looked at (routes.py: the assets and the login exchange; codes.py: one-time login codes;
static/: the page itself, plain ES modules and CSS shipped as package data, with no build step and no CDN).

Every API call the page makes is an ordinary request as its user, with the bearer token in the Authorization
header, so the core's authentication and RBAC decide what it shows; the console holds no rights of its own.
"""
