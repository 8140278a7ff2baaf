package org.rdmashuffle.core.control;

/**
 * The control protocol versions one end speaks, {@code lowest} to {@code highest}, and how two ends
 * agree on one (docs/compatibility.md). The client offers its range in its HELLO; the server answers
 * with the highest version both speak, in the type byte of its CHALLENGE and AUTH_OK, or refuses with
 * an ERROR naming both ranges. A version is one byte, read unsigned.
 *
 * <p>The HELLO's type byte says which encoding follows. {@value #ALONE} or less: one version alone
 * and the HELLO's payload as it is (what the releases before negotiation send: 0.1.0 sends 3). Above
 * it: an offer, its highest version in the type byte and its lowest in the payload's first byte, the
 * HELLO's payload after it. A server of a release before negotiation refuses an offer (its type byte
 * is not its version) with an ERROR of type 0; a client of this release then connects again with
 * version {@value #ALONE} alone, if it speaks it. A server of this release refuses with an ERROR whose
 * type byte is its highest version: that refusal is final.
 *
 * <p>Nothing here is sized by the peer: an offer is two bytes, checked, and the choice always lies in
 * this end's own range.
 *
 * <p>Versions so far, raised when an encoding of the control plane (its frames or the messages they
 * carry) changes: 0, the releases before it was sent; 2, the server proves itself last, a CONNECT
 * reply carries the lease; 3 (0.1.0), CONNECT carries flags, the reply's saying whether its regions are
 * read from page boundaries only; 4, the HELLO offers a range and the server chooses; 5, data connections
 * carry held answers and their releases (a server crowded for registered memory keeps an output registered
 * for the reducers reading it, until they say they are done, instead of for a whole lease). Everything on
 * the control connection after the handshake is encoded alike in 3, 4 and 5.
 */
record ProtocolVersions(int lowest, int highest) {
    /** The version the releases before negotiation send alone, and the one this release still speaks to them. */
    static final int ALONE = 3;
    /**
     * What this release speaks: the version-3 builds' (sent alone), 4 (the first with offers) and its own.
     * 0.1.0 is the first tagged release: it keeps every version the untagged builds before it spoke.
     */
    static final ProtocolVersions SPOKEN = new ProtocolVersions(3, 5);
    /** The first version whose data connections carry held answers and releases ({@code Message.Release}). */
    static final int HELD_ANSWERS = 5;
    /**
     * How every refusal about versions begins, as the releases before negotiation began theirs: a client
     * of any release takes an ERROR that begins so for a {@link ProtocolVersionException}.
     */
    static final String REFUSAL = "rdma-shuffle control protocol version";
    /** What the refusals tell an operator to do. */
    static final String FIX = "run rdma-shuffle releases at most one apart on both sides (docs/compatibility.md)";
    private static final int MAX = 0xFF;

    ProtocolVersions {
        if (lowest < 0 || lowest > highest || highest > MAX) {
            throw new IllegalArgumentException("protocol versions " + lowest + " to " + highest + ": not a range within 0 to "
                    + MAX);
        }
        if (highest <= ALONE) {
            throw new IllegalArgumentException("protocol versions " + lowest + " to " + highest + ": an offer's highest "
                    + "version is above " + ALONE + " (the last version sent alone), else it reads as that version alone");
        }
    }

    boolean speaks(int version) {
        return version >= lowest && version <= highest;
    }

    /** "versions 3 to 4", or "version 4" for one. */
    String describe() {
        return describe(lowest, highest);
    }

    static String describe(int lowest, int highest) {
        return lowest == highest ? "version " + lowest : "versions " + lowest + " to " + highest;
    }

    /** The HELLO's type byte: our highest version, or {@link #ALONE} sent alone. */
    byte helloType(boolean alone) {
        return (byte) (alone ? ALONE : highest);
    }

    /** The HELLO's payload: {@code body} after our lowest version, or {@code body} alone. */
    byte[] helloPayload(boolean alone, byte[] body) {
        if (alone) {
            return body;
        }
        byte[] out = new byte[1 + body.length];
        out[0] = (byte) lowest;
        System.arraycopy(body, 0, out, 1, body.length);
        return out;
    }

    /** The highest version both this end and {@code offer} speak, or -1 for none. */
    int choose(Offer offer) {
        int chosen = Math.min(highest, offer.highest());
        return chosen >= Math.max(lowest, offer.lowest()) ? chosen : -1;
    }

    /** What a server tells a client whose {@code offer} shares no version with it (an ERROR's text). */
    String refusal(Offer offer) {
        return (offer.alone() ? REFUSAL + " " + offer.highest() + " is not spoken here"
                : REFUSAL + "s " + offer.lowest() + " to " + offer.highest() + " offered, none spoken here")
                + " (this side speaks " + describe() + "): " + FIX;
    }

    /** The version part of a client's HELLO. */
    record Offer(int lowest, int highest, boolean alone) {
        /**
         * Reads it from a HELLO's type byte and payload.
         *
         * @throws IllegalArgumentException a malformed offer, the message saying what is wrong with it
         */
        static Offer read(byte type, byte[] payload) {
            int highest = type & MAX;
            if (highest <= ALONE) {
                return new Offer(highest, highest, true);
            }
            if (payload.length < 1) {
                throw new IllegalArgumentException("malformed " + REFUSAL + " offer: highest version " + highest
                        + " and no lowest (an empty hello)");
            }
            int lowest = payload[0] & MAX;
            if (lowest > highest) {
                throw new IllegalArgumentException("malformed " + REFUSAL + " offer: lowest version " + lowest
                        + " above the highest, " + highest);
            }
            return new Offer(lowest, highest, false);
        }

        /** The HELLO's own payload, after the offer. */
        byte[] body(byte[] payload) {
            return alone ? payload : java.util.Arrays.copyOfRange(payload, 1, payload.length);
        }
    }
}
