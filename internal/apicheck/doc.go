// Package apicheck holds a test of the module's public API: no exported
// identifier of a public package names a type of an internal package, which
// no caller outside the module could name, so it could not call it.
package apicheck
