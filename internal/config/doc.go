// Package config reads the service's settings from the environment and
// checks them, naming the offending setting in every error.
//
// Every setting is one row of the table in settings.go: its variable, its
// default, whether it is a secret (then NAME_FILE is read too), what it does,
// and how its value is checked and stored in Config. Load, `consensusd
// --help`, `consensusd config check` and docs/configuration.md all read that
// table, so adding a setting means adding a row (and its Config field).
package config
