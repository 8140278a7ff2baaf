package org.rdmashuffle.verbs.software;

import java.nio.ByteBuffer;

/**
 * The software provider's wire format: every message is a fixed 56-byte header, followed for
 * WRITE, SEND, ATTACH and successful READ responses by {@code length} payload bytes ({@link
 * FrameWriter} writes them, {@link FrameReader} parses them). One connection ({@link PeerLink})
 * carries the frames of every QP pair between two devices; the header names both QPs. Both ends of
 * a QP pair are requesters and responders at once, as both QPs of an RC pair are.
 *
 * <pre>
 *  0 type      1 flags (bit 0 immediate, bit 1 solicited, bit 2 invalidate)   2..3 unused   4 status
 *  8 sequence (the requester's, echoed in the response)
 * 16 remote address   24 rkey (a SEND_WITH_INV: the key it invalidates)   28 length
 * 32 a: immediate (host order) | compare/add operand | old value (atomic response)
 * 40 b: swap operand
 * 48 destination QPN  52 source QPN
 * </pre>
 */
final class Frame {
    static final int HEADER = 56;

    // Requests (requester → responder).
    static final byte READ = 1;
    static final byte WRITE = 2;
    static final byte SEND = 3;
    static final byte COMPARE_SWAP = 4;
    static final byte FETCH_ADD = 5;
    /** A request that only asks for an ACK: keeps a locally failed WR in order with the others. */
    static final byte NOP = 6;
    // Responses (responder → requester).
    static final byte READ_RESPONSE = 11;
    static final byte ACK = 12;
    static final byte ATOMIC_RESPONSE = 13;
    /**
     * Receiver not ready: the responder dropped request {@code sequence} (status: {@link #NAK_NO_RECEIVE}
     * or {@link #NAK_NOT_READY}) and drops the QP's later requests until the requester sends that one again.
     */
    static final byte RNR_NAK = 14;
    // Link control (a QP joining or leaving a link).
    /** A dialling QP asks to join the destination QP: the payload is the token from its endpoint. */
    static final byte ATTACH = 20;
    /** The answer to ATTACH: status 0 joined, else refused. */
    static final byte ATTACH_ACK = 21;
    /** The source QP failed or closed: the destination QP fails as when the connection is lost. */
    static final byte DETACH = 22;

    static final int NAK_NO_RECEIVE = 1;
    static final int NAK_NOT_READY = 2;

    static final int FLAG_IMMEDIATE = 1;
    static final int FLAG_SOLICITED = 2;
    /** A SEND_WITH_INV: {@link #rkey} names the receiver's window it takes back. */
    static final int FLAG_INVALIDATE = 4;

    /** Link hello: magic and version (2: many QPs per connection). */
    static final int HELLO_MAGIC = 0x52534832; // "RSH2"
    static final int MAX_TOKEN = 256;

    byte type;
    int flags;
    int status;
    long sequence;
    long address;
    int rkey;
    int length;
    long a;
    long b;
    int dstQpn;
    int srcQpn;
    /** What follows the header on the wire (requests and responses that carry data); null for none. */
    ByteBuffer[] payload;
    /**
     * For a read answer from a file-backed region: the file and where the payload starts in it. The
     * writer sends from it with {@code sendfile} as far as the socket takes at once, the rest from
     * {@link #payload} (the same bytes through the mapping).
     */
    java.nio.channels.FileChannel file;
    long filePosition;

    Frame() {
    }

    /** Makes this an empty request of {@code type}, to be filled in (a frame is reused by its owner). */
    Frame reset(byte type, long sequence) {
        this.type = type;
        this.sequence = sequence;
        flags = 0;
        status = 0;
        address = 0;
        rkey = 0;
        length = 0;
        a = 0;
        b = 0;
        dstQpn = 0;
        srcQpn = 0;
        payload = null;
        file = null;
        return this;
    }

    /** How many payload bytes follow this header on the wire. */
    long payloadLength() {
        return switch (type) {
            case WRITE, SEND, ATTACH -> Integer.toUnsignedLong(length);
            case READ_RESPONSE -> status == 0 ? Integer.toUnsignedLong(length) : 0;
            default -> 0;
        };
    }

    /**
     * The same request again, for a resend after an RNR NAK: its own payload views (the first send's
     * were consumed by the writer, which may still be writing them).
     */
    Frame copyForResend() {
        Frame c = request(type, sequence);
        c.flags = flags;
        c.address = address;
        c.rkey = rkey;
        c.length = length;
        c.a = a;
        c.b = b;
        c.dstQpn = dstQpn;
        c.srcQpn = srcQpn;
        if (payload != null) {
            c.payload = new ByteBuffer[payload.length];
            for (int i = 0; i < payload.length; i++) {
                c.payload[i] = payload[i].duplicate().position(0);
            }
        }
        return c;
    }

    static Frame request(byte type, long sequence) {
        return new Frame().reset(type, sequence);
    }

    static Frame response(byte type, long sequence, int status) {
        Frame f = request(type, sequence);
        f.status = status;
        return f;
    }

    /** The header, in a new buffer. */
    ByteBuffer encode() {
        ByteBuffer h = ByteBuffer.allocate(HEADER);
        encode(h);
        return h;
    }

    /** Writes the header into {@code h}'s first {@value #HEADER} bytes (absolute: its position stays). */
    void encode(ByteBuffer h) {
        h.put(0, type).put(1, (byte) flags).putInt(4, status).putLong(8, sequence).putLong(16, address)
                .putInt(24, rkey).putInt(28, length).putLong(32, a).putLong(40, b)
                .putInt(48, dstQpn).putInt(52, srcQpn);
    }
}
