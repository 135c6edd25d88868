package control

import (
	"fmt"

	"github.com/stromdb/strom/internal/options"
)

// ReadHeartbeatOptions reads the heartbeat-fencing options (coordinator.heartbeat.*,
// tablet-server.fence-check.*) from a node's raw configuration into opts.
func ReadHeartbeatOptions(raw map[string]string, opts *Options) error {
	var err error
	if opts.HeartbeatInterval, err = options.HeartbeatInterval.Get(raw); err != nil {
		return err
	}
	if opts.HeartbeatFenceAfter, err = options.HeartbeatFenceAfter.Get(raw); err != nil {
		return err
	}
	if opts.HeartbeatStandbys, err = options.HeartbeatStandbys.Get(raw); err != nil {
		return err
	}
	if opts.FenceCheckInterval, err = options.FenceCheckInterval.Get(raw); err != nil {
		return err
	}
	if opts.FenceCheckGrace, err = options.FenceCheckGrace.Get(raw); err != nil {
		return err
	}
	if opts.FenceCheckGrace > 0 && opts.FenceCheckGrace < 2*opts.FenceCheckInterval {
		return fmt.Errorf("%s (%s) must be at least twice %s (%s): one late read would stop the server acknowledging",
			options.FenceCheckGrace.Key, opts.FenceCheckGrace, options.FenceCheckInterval.Key, opts.FenceCheckInterval)
	}
	if opts.HeartbeatInterval > 0 && opts.HeartbeatFenceAfter < 2*opts.HeartbeatInterval {
		return fmt.Errorf("%s (%s) must be at least twice %s (%s): one late heartbeat would fence a server",
			options.HeartbeatFenceAfter.Key, opts.HeartbeatFenceAfter, options.HeartbeatInterval.Key, opts.HeartbeatInterval)
	}
	return nil
}
