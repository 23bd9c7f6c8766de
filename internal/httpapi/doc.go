// Package httpapi is the HTTP face of Consensus: the chi router, the agent,
// operator and discovery handlers, and the middleware that identifies each
// request, logs it without credentials, refuses credentials in query
// strings and limits exchange and claim rates. It is the only package that
// imports chi.
package httpapi
