// Package auth implements SASL/PLAIN authentication with users configured the way Fluss
// configures them: a JAAS string naming PlainLoginModule with user_<name>="<password>" entries.
package auth

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Plain checks SASL/PLAIN tokens against a fixed set of users.
type Plain struct {
	users map[string]string
}

var jaasUser = regexp.MustCompile(`user_([^\s=]+)\s*=\s*"([^"]*)"`)

// ParseJAAS builds a Plain authenticator from a JAAS configuration string such as
//
//	org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required user_admin="admin-secret";
func ParseJAAS(jaas string) (*Plain, error) {
	if !strings.Contains(jaas, "PlainLoginModule") {
		return nil, errors.New("JAAS configuration does not name PlainLoginModule")
	}
	p := &Plain{users: map[string]string{}}
	for _, m := range jaasUser.FindAllStringSubmatch(jaas, -1) {
		p.users[m[1]] = m[2]
	}
	if len(p.users) == 0 {
		return nil, errors.New(`JAAS configuration defines no user_<name>="<password>" entries`)
	}
	return p, nil
}

// Mechanisms implements wire.Authenticator.
func (p *Plain) Mechanisms() []string { return []string{"PLAIN"} }

// Authenticate checks a PLAIN token: [authzid] NUL username NUL password.
func (p *Plain) Authenticate(mechanism string, token []byte) (string, error) {
	if mechanism != "PLAIN" {
		return "", fmt.Errorf("unsupported SASL mechanism %s", mechanism)
	}
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return "", errors.New("Authentication failed: Invalid SASL/PLAIN response: expected 3 tokens")
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return "", errors.New("Authentication failed: username not specified")
	}
	if len(pass) == 0 {
		return "", errors.New("Authentication failed: password not specified")
	}
	want, ok := p.users[user]
	if !ok || subtle.ConstantTimeCompare([]byte(want), pass) != 1 {
		return "", errors.New("Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != user {
		return "", errors.New("Authentication failed: Client requested an authorization id that is different from username")
	}
	return "User:" + user, nil
}
