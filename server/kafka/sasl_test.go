package kafka_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestSASLPlain checks that a Kafka listener named sasl takes the Fluss listeners' JAAS
// users: the right password produces and consumes, a wrong one is refused.
func TestSASLPlain(t *testing.T) {
	nd := startNode(t, map[string]string{
		"security.protocol.map":           "KAFKA:sasl",
		"security.sasl.plain.jaas.config": `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required user_alice="alice-secret";`,
	})
	ctx := context.Background()
	good := client(t, nd.kafka, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	createTopic(t, good, "secure", 1)
	if err := good.ProduceSync(ctx, &kgo.Record{Topic: "secure", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce as alice: %v", err)
	}
	bad := client(t, nd.kafka, kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()), kgo.RequestRetries(0))
	if err := bad.Ping(ctx); err == nil {
		t.Fatal("a wrong password was accepted")
	}
}
