// Package httpapi is the HTTP face of Consensus: the chi router, the agent,
// operator and discovery handlers, and the middleware that identifies each
// request, logs it without credentials, refuses credentials in query
// strings, limits exchange and claim rates and authenticates each route
// group once (operator, session, participant), handing handlers their
// principal through the context. Every error answer is written by one
// function from one table of problem codes (problem.go). It is the only
// package that imports chi.
package httpapi
