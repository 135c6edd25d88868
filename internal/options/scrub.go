package options

import "time"

// The background scrubber of tablet servers (docs/durability.md, "The scrubber").
var (
	LogScrubRate = BytesOf(Option{Key: "log.scrub.rate", Default: "4mb", Scope: Server,
		See: "durability.md#the-scrubber", Desc: "bytes per second the scrubber re-reads of sealed log segments to re-check their CRCs; 0 turns it off"}, NonNegative[int64])
	LogScrubInterval = DurationOf(Option{Key: "log.scrub.interval", Default: "1h", Scope: Server,
		See: "durability.md#the-scrubber", Desc: "pause between two scrubber passes over every log of the server (also before the first)"}, Positive[time.Duration])
)
