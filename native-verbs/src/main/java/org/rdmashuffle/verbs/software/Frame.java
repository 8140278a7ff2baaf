package org.rdmashuffle.verbs.software;

import java.nio.ByteBuffer;

/**
 * The software provider's wire format: every message is a fixed 48-byte header, followed for
 * WRITE, SEND and successful READ responses by {@code length} payload bytes ({@link FrameWriter}
 * writes them, {@link FrameReader} parses them). Both ends of a
 * connection are requesters and responders at once, as both QPs of an RC pair are.
 *
 * <pre>
 *  0 type      1 flags (bit 0 immediate, bit 1 solicited)   2..3 unused   4 status
 *  8 sequence (the requester's, echoed in the response)
 * 16 remote address   24 rkey   28 length
 * 32 a: immediate (host order) | compare/add operand | old value (atomic response)
 * 40 b: swap operand
 * </pre>
 */
final class Frame {
    static final int HEADER = 48;

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

    static final int FLAG_IMMEDIATE = 1;
    static final int FLAG_SOLICITED = 2;

    /** Connection hello: magic, version. */
    static final int HELLO_MAGIC = 0x52534831; // "RSH1"
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
    /** What follows the header on the wire (requests and responses that carry data); null for none. */
    ByteBuffer[] payload;

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
        payload = null;
        return this;
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
                .putInt(24, rkey).putInt(28, length).putLong(32, a).putLong(40, b);
    }
}
