// Package flusspb holds the Go types of the Fluss RPC messages, generated from fluss.proto.
//
// Regenerating needs protoc (Debian's protobuf-compiler) and protoc-gen-go on PATH.
package flusspb

//go:generate protoc --go_out=. --go_opt=paths=source_relative fluss.proto
