// Package noisesession carries a Syndicate relay (dataspace/relay) over a
// Noise session (services spec §6.5, noise.prs): both the responder side
// run by services/gatekeeper and the initiator side run by
// services/resolve. It lives beside dataspace/relay because a Noise
// session is just another byte stream for the relay, and because sibling
// services may not import each other.
//
// # Specs and protocols
//
// [ParseSpec] validates a NoiseSpec dictionary (`service`, `key`,
// optional `protocol` and `preSharedKeys`), or a NoiseServiceSpec when
// asked to accept its `secretKey`, into a [Spec]; [Spec.ToValue] renders
// it back without the secret and with defaults left out. Both go through
// the generated noise.prs types (dataspace/schemas/noise); ParseSpec adds
// what the schema cannot say (known protocol names, 32-byte keys, the
// secret matching `key`, the schema's `invalid` alternatives refused).
// A protocol name is `Noise_<PATTERN>_25519_ChaChaPoly_BLAKE2s` where
// PATTERN is one of the fifteen standard patterns optionally followed by
// psk modifiers (`NNpsk0+psk2`). [Spec.Handshake] builds one side's
// handshake; the Noise prologue is the canonical binary encoding of the
// service selector, so both sides must agree on it exactly.
//
// # Packets
//
// On the wire a Packet is either one complete transport message (a byte
// string) or a fragment list `[bytes …]`, each piece at most 65535 bytes
// (the Noise message limit). [SealPacket] encrypts one relay write as one
// message when its plaintext fits in 65519 bytes (65535 less the 16-byte
// AEAD tag) and otherwise as a list of 65519-byte pieces, each encrypted
// on its own; [DecodePacket] splits a Packet back into its messages,
// whose decrypted plaintexts are concatenated. A sender may pad a
// plaintext with trailing 0x80 bytes (`#f` in binary Preserves), which
// [StripPadding] removes: no binary protocol packet ends with 0x80, since
// every packet is a compound ending in 0x84. Handshake messages are always
// complete byte strings with empty payloads.
//
// # Sessions
//
// A [Session] drives one side in a facet of an actor (the session facet):
// [Session.Begin] names the peer's entity (where our Packets go) and, for
// the initiator, sends the first handshake message; [Session.Packet]
// handles each Packet from the peer; [Session.End] ends the session. When
// the handshake completes, the session switches to transport mode and
// runs a relay ([relay.Run]) in the session facet over an internal
// io.ReadWriteCloser: reads yield the plaintext of decrypted inbound
// Packets (fed by the session's turns, bounded so a peer outrunning the
// relay ends the session instead of growing memory), and each relay write
// is sealed as one Packet and sent to the peer as a message in a turn of
// the session facet. The first cipher state carries initiator-to-responder
// traffic, the second the other direction. The session ends, calling its
// OnEnd hook once, on a handshake or decryption failure, when the relay
// stops on its own, or when the owner calls End (e.g. the peer retracted
// its assertion).
//
// # Caveats (github.com/flynn/noise)
//
// Validation accepts every standard pattern and psk variant, but some
// valid protocols cannot run here and [Spec.Handshake] refuses them with
// an error wrapping [ErrUnsupported]: several psk modifiers (flynn/noise
// has a single psk slot), and the K-initiator patterns (K, KN, KK, KX),
// whose initiator static key the responder must know in advance but which
// no NoiseSpec carries. A NoiseSpec carries no initiator identity either,
// so patterns that transmit the initiator's static key (X, XX, IK, …) use
// a fresh key pair per session. One-way patterns (N, K, X) run with the
// reverse cipher state carrying the responder's traffic, which the Noise
// specification does not define (the relay needs a reply channel). PSKs
// are drawn in order, all zeros once the list is exhausted. An initiator
// given a non-empty responder key checks it against the static key the
// responder proves even when the pattern transmits that key rather than
// taking it in advance (XX, NX, IX), so those patterns do not accept
// anyone.
package noisesession
