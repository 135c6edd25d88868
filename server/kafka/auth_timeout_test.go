package kafka_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// A connection to a SASL Kafka listener that never authenticates is closed once
// security.sasl.authentication.timeout passes, as on the Fluss listeners; one that
// authenticates is served.
func TestSASLAuthenticationTimeoutClosesSilentConnections(t *testing.T) {
	nd := startNode(t, map[string]string{
		"security.protocol.map":                "KAFKA:sasl",
		"security.sasl.plain.jaas.config":      `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required user_alice="alice-secret";`,
		"security.sasl.authentication.timeout": "300ms",
	})
	silent, err := net.Dial("tcp", nd.kafka)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The deadline here only keeps a broken server from hanging the test; the server must
	// close the connection long before it.
	silent.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatal("the server sent bytes to a connection that never spoke")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("an unauthenticated connection was kept past the authentication timeout")
	}
	good := client(t, nd.kafka, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err := good.Ping(context.Background()); err != nil {
		t.Fatalf("authenticated client: %v", err)
	}
}
