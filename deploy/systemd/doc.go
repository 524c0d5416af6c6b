// Package systemd holds snowfence's systemd unit (snowfence.service) and
// the example of its environment file (snowfence.env), and their test:
// systemd-analyze verify and security on the unit, its settings against
// the drain, and serve run under strace with the unit's environment, every
// system call, socket family, memory mapping and file it writes checked
// against what the unit's sandbox allows. There is no Go code to use here;
// docs/deployment.md says what to set.
package systemd
