// Package netns builds private networks out of Linux network namespaces for partition tests:
// a bridge in a namespace of its own, and hosts — namespaces attached to it by veth pairs,
// with addresses of 10.231.0.0/24 — in which servers and clients run. Any link between two
// hosts can be cut one way or both, for every port or only some, with nftables rules in the
// sending host's namespace, and healed again.
//
// Nothing touches the namespace the test runs in: traffic between hosts never leaves the
// namespaces the test created, and every namespace (hence every veth, bridge and nft table
// in it) is deleted when the test ends. Namespaces left by a test process that was killed are
// deleted by the next New, with the processes still running in them. Creating namespaces
// needs root, `ip` (iproute2) and `nft` (nftables); without them New skips the test, saying
// what is missing.
package netns
