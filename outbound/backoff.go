package outbound

import "time"

// Backoff returns how long a caller should wait before its retry number
// retry (0 for the first) of a whole operation, such as a replica's next
// poll after a failed one: the client's own exponential backoff with full
// jitter, a random duration in [0, min(BackoffCap, BackoffBase*2^retry)].
func (c *Client) Backoff(retry int) time.Duration {
	return fullJitter(c.cfg.BackoffBase, c.cfg.BackoffCap, max(retry, 0))
}
