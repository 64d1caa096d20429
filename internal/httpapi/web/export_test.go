package web

// HandlerOf serves other files as Handler serves the app's: a new
// binary's, in tests.
var HandlerOf = handler
