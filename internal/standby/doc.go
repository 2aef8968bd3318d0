// Package standby decides which informers a replica keeps while another
// replica leads. A standby that cached every Node and Service, as the
// leader does, held about as much memory as the leader for the sole
// purpose of acting at once on takeover. But a takeover is announced: the
// standby watches the Lease, and the holder's lease expires a whole lease
// duration after its last renewal. The Warmer keeps the standby's caches
// empty while the holder renews, fills them once the holder has missed
// renewals (or released the Lease), so that they are synced by the time
// the Lease can be taken, and empties them again when the holder renews
// for a while after all.
package standby
