package tablet

// Internals the external tests (package tablet_test) check directly.
var (
	StageConcurrently   = stageConcurrently
	ForEachConcurrently = forEachConcurrently
)
