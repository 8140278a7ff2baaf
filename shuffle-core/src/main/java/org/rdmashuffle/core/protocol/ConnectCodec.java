package org.rdmashuffle.core.protocol;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.verbs.QueuePairEndpoint;

/**
 * The control-plane request that sets up a data connection, and its reply: the sender's receive
 * buffer size (so the other side never sends a message it cannot take), in the reply the server's
 * lease (how long it keeps a described region registered: the reducer trusts a description for half
 * of the shorter of that and its own fetch timeout), its flags ({@link #PAGE_ALIGNED_READS}), and one
 * endpoint per queue pair. Strictly parsed: a flag this release does not know is refused. Encoded
 * alike in control protocol versions 3 and 4; a release that changes it encodes by the version the
 * control connection agreed ({@code ControlSession.protocolVersion()}, {@code ControlClient.protocolVersion()})
 * and keeps the previous encoding (docs/compatibility.md).
 */
public final class ConnectCodec {
    /** Control-plane request type of the exchange. */
    public static final byte CONNECT = 1;
    /**
     * Control-plane request that ends one data connection the same control connection set up (named by
     * the server's first queue pair number), keeping the control connection: a reducer closing an idle
     * connection. The reply is empty.
     */
    public static final byte DISCONNECT = 2;
    public static final int MAX_QUEUE_PAIRS = 64;
    /**
     * The smallest receive buffer a side may name: every release's own floor for {@code srq.bufferSize}
     * (1k), so no honest peer names less, and a message of the most a server sends about one request (a
     * refusal, an answer of {@link MessageCodec#descriptorsFitting} blocks) always fits. A size below is
     * refused, naming the field and its bounds. There is no ceiling to refuse at: a receive buffer is
     * what its side can take, and each side sends at most the smaller of that and its own buffer (the
     * server's slot is its ceiling), so a larger size named changes nothing the sender does.
     */
    public static final int MIN_RECEIVE_BUFFER_SIZE = 1024;
    /**
     * Flag: read this side's regions only from page boundaries (its memory is on demand on a device whose
     * paging is right only for transfers that start on a page: transport.MemoryRegistration).
     */
    public static final int PAGE_ALIGNED_READS = 1;
    private static final int KNOWN_FLAGS = PAGE_ALIGNED_READS;

    /** One side of the exchange; {@code leaseMillis} is the server's lease (0 in a request). */
    public record Connect(int receiveBufferSize, long leaseMillis, int flags, List<QueuePairEndpoint> endpoints) {
        public Connect {
            endpoints = List.copyOf(endpoints);
        }

        /** No flags. */
        public Connect(int receiveBufferSize, long leaseMillis, List<QueuePairEndpoint> endpoints) {
            this(receiveBufferSize, leaseMillis, 0, endpoints);
        }

        /** A request: no lease, no flags. */
        public Connect(int receiveBufferSize, List<QueuePairEndpoint> endpoints) {
            this(receiveBufferSize, 0, endpoints);
        }

        /** Whether this side's regions are read only from page boundaries. */
        public boolean pageAlignedReads() {
            return (flags & PAGE_ALIGNED_READS) != 0;
        }
    }

    private ConnectCodec() {
    }

    public static byte[] encode(Connect c) {
        List<byte[]> parts = c.endpoints().stream().map(EndpointCodec::encode).toList();
        ByteBuffer out = ByteBuffer.allocate(20 + parts.stream().mapToInt(p -> 2 + p.length).sum());
        out.putInt(c.receiveBufferSize()).putLong(c.leaseMillis()).putInt(c.flags()).putInt(parts.size());
        for (byte[] p : parts) {
            out.putShort((short) p.length).put(p);
        }
        return out.array();
    }

    public static Connect decode(byte[] bytes) {
        try {
            ByteBuffer in = ByteBuffer.wrap(bytes);
            int receiveBufferSize = in.getInt();
            long leaseMillis = in.getLong();
            int flags = in.getInt();
            int n = in.getInt();
            if (receiveBufferSize < MIN_RECEIVE_BUFFER_SIZE) {
                throw new MalformedMessageException("connect with a receive buffer size of " + receiveBufferSize
                        + " bytes, outside " + MIN_RECEIVE_BUFFER_SIZE + ".." + Integer.MAX_VALUE);
            }
            if (n < 1 || n > MAX_QUEUE_PAIRS) {
                throw new MalformedMessageException("connect with " + n + " queue pairs, outside 1.." + MAX_QUEUE_PAIRS);
            }
            if (leaseMillis < 0) {
                throw new MalformedMessageException("connect with a lease of " + leaseMillis + " ms, outside 0.." + Long.MAX_VALUE);
            }
            if ((flags & ~KNOWN_FLAGS) != 0) {
                throw new MalformedMessageException("connect with unknown flags 0x" + Integer.toHexString(flags & ~KNOWN_FLAGS));
            }
            List<QueuePairEndpoint> endpoints = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int length = in.getShort() & 0xFFFF;
                if (length > in.remaining()) {
                    throw new MalformedMessageException("endpoint " + i + " of " + length + " bytes, " + in.remaining() + " left");
                }
                byte[] e = new byte[length];
                in.get(e);
                endpoints.add(EndpointCodec.decode(e));
            }
            if (in.hasRemaining()) {
                throw new MalformedMessageException("connect with " + in.remaining() + " trailing bytes");
            }
            return new Connect(receiveBufferSize, leaseMillis, flags, endpoints);
        } catch (BufferUnderflowException e) {
            throw new MalformedMessageException("connect of " + bytes.length + " bytes is truncated", e);
        }
    }

    public static byte[] encodeDisconnect(int serverQpNumber) {
        return ByteBuffer.allocate(4).putInt(serverQpNumber).array();
    }

    public static int decodeDisconnect(byte[] bytes) {
        if (bytes.length != 4) {
            throw new MalformedMessageException("disconnect of " + bytes.length + " bytes, not 4");
        }
        return ByteBuffer.wrap(bytes).getInt();
    }
}
