// Package config owns meka's configuration: the types of config.toml, its
// parsing and validation, the human duration syntax ("30m", "1h 30m",
// "1.5h") used there and by the scheduler, the zero-config profile taken
// from provider keys in the environment, and the default locations of the
// config file and data directory.
//
// It reads nothing on its own: Load reads the one file it is given, and
// every function that needs the environment takes a getenv function, so
// internal/cli stays the only reader of the environment and decides the
// precedence (defaults < file < env < flags). Every problem in a file is
// reported as an *Error naming the file, line and key.
//
// It is layer L0 and imports only meka.dev/meka/permission from meka.
package config
