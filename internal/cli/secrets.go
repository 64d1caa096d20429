package cli

import (
	"errors"
	"os"
	"strings"
	"sync"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/sandbox"
)

// hiddenKeys holds the provider keys HideKeys took out of the process's
// environment: the environment is the process's, so this is too.
var hiddenKeys struct {
	mu     sync.Mutex // guards values
	values map[string]string
}

// HideKeys takes the provider key variables (the defaults and those the
// config file's profiles name) out of meka's environment, including the
// block /proc/<pid>/environ shows, and keeps them in memory for Main's
// profiles: no child of meka, at any level, can read them there. Then it
// makes meka undumpable, so no child reads its memory either. The
// meka binary calls it before Main; Main driven in-process by tests
// reads the environment as it is.
func HideKeys(args []string) error {
	names := keyVariables(config.Default())
	if cfg, err := config.Load(configArg(args)); err == nil {
		names = keyVariables(cfg)
	}
	values, err := sandbox.HideEnv(names)
	hiddenKeys.mu.Lock()
	hiddenKeys.values = values
	hiddenKeys.mu.Unlock()
	// After HideEnv, which writes through /proc/self/mem: from here the
	// keys in memory are out of a child's reach too.
	return errors.Join(err, sandbox.Undumpable())
}

// configArg finds the config file as loadConfig would, before flags are
// parsed: --config, else $MEKA_CONFIG, else the default path.
func configArg(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v
		}
		if a == "--config" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return config.ConfigPath(os.Getenv)
}

// getenv is os.Getenv that also answers the keys HideKeys took.
func getenv(name string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	hiddenKeys.mu.Lock()
	defer hiddenKeys.mu.Unlock()
	return hiddenKeys.values[name]
}
