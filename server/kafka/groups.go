package kafka

// groupCoordinator will hold consumer groups; none are served yet (docs/kafka.md).
type groupCoordinator struct{ s *Server }

func newGroupCoordinator(s *Server) *groupCoordinator { return &groupCoordinator{s: s} }
