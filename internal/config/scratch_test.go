package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"meka.dev/meka/permission"
)

type sdur time.Duration

func (d *sdur) UnmarshalText(b []byte) error {
	if string(b) == "bad" {
		return fmt.Errorf("parse duration %q: bad", b)
	}
	return nil
}

type sprof struct {
	Model  string `toml:"model"`
	Vision *bool  `toml:"vision"`
	N      *int   `toml:"n"`
}
type sconf struct {
	Default  string           `toml:"default_profile"`
	Profiles map[string]sprof `toml:"profiles"`
	Perm     struct {
		Enabled []permission.Level          `toml:"enabled"`
		TP      map[string]permission.Level `toml:"tp"`
	} `toml:"permissions"`
	D *sdur `toml:"d"`
}

func TestScratch(t *testing.T) {
	for _, doc := range []string{
		"default_profile = 1\n",
		"[profiles.x]\nmodle = 'a'\n\n[profiles.y]\nfoo.bar = 3\n",
		"[profiles.x]\nn = 'a'\n",
		"[profiles.x]\nn = 1.5\n",
		"[profiles.x]\nn = 99999999999999999999\n",
		"[permissions]\nenabled = ['read', 'nope']\n",
		"[permissions]\ntp = {a = 'nope'}\n",
		"[permissions.tp]\n\"a.b\" = 'nope'\n",
		"d = 'bad'\n",
		"d = 5\n",
		"[profiles]\nx = 5\n",
		"x = \n",
		"[profiles.x]\nmodel='a'\n[profiles.x]\n",
		"profiles = []\n",
		"[[profiles.x]]\n",
	} {
		var c sconf
		err := toml.NewDecoder(strings.NewReader(doc)).DisallowUnknownFields().Decode(&c)
		var de *toml.DecodeError
		var se *toml.StrictMissingError
		switch {
		case errors.As(err, &se):
			for _, e := range se.Errors {
				l, col := e.Position()
				t.Logf("%q STRICT %d:%d key=%q msg=%v", doc, l, col, e.Key(), e.Error())
			}
		case errors.As(err, &de):
			l, col := de.Position()
			t.Logf("%q DECODE %d:%d key=%q msg=%v", doc, l, col, de.Key(), de.Error())
		default:
			t.Logf("%q OTHER %T %v", doc, err, err)
		}
	}
}
