package tablet

import (
	"testing"

	"github.com/stromdb/strom/internal/wire/apilayout"
)

// Every tablet server API is one file: the file that adds the API to its service's table (in an
// init function) declares the handler it registers, and registers nothing else; every handler
// method is registered. This keeps the layout of docs/architecture.md ("The tablet server's services") true
// as services and APIs are added.
func TestEveryAPIFileHoldsItsHandlerAndRegistration(t *testing.T) {
	n, problems, err := apilayout.Check(".", "register")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if n != len(registeredKeys) {
		t.Errorf("found %d registrations in init functions, but %d keys are registered: register every API from its file's init", n, len(registeredKeys))
	}
}
