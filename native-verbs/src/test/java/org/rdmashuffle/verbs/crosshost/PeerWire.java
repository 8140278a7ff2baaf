package org.rdmashuffle.verbs.crosshost;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.QueuePairEndpoint;

/**
 * The little TCP protocol between a cross-host test and {@link RemotePeerAgent} on the other host:
 * set-up (sizes and queue-pair endpoints both ways, then the agent's word that its QP is ready to
 * send), then one command at a time, each answered.
 * Everything the agent reads is bounded before it allocates: a test is its only client, but a
 * stray connection must not make it allocate what a length field says.
 */
final class PeerWire {
    static final byte FILL = 'F';
    static final byte DUMP = 'D';
    static final byte RECEIVED = 'C';
    static final byte SEND = 'S';
    static final byte STATE = 'Q';
    static final byte END = 'X';
    /** The agent's QP reached RTS: the test may post. */
    static final byte CONNECTED = 'c';

    static final int MAX_DATA_BYTES = 16 << 20;
    static final int MAX_RECEIVES = 64;
    static final int MAX_RECEIVE_BYTES = 64 << 10;

    private PeerWire() {
    }

    /** What the test asks of the agent's side. */
    record Setup(int dataBytes, int receives, int receiveBytes, boolean sharedReceiveQueue) {
        Setup {
            if (dataBytes < 8 || dataBytes > MAX_DATA_BYTES || receives < 0 || receives > MAX_RECEIVES
                    || receiveBytes < 0 || receiveBytes > MAX_RECEIVE_BYTES) {
                throw new IllegalArgumentException("set-up out of bounds: " + dataBytes + " data bytes, " + receives
                        + " receives of " + receiveBytes);
            }
        }

        /** Receive slot {@code i} lies after the data in the agent's one region. */
        long receiveOffset(int i) {
            return dataBytes + (long) i * receiveBytes;
        }

        long regionBytes() {
            return receiveOffset(receives);
        }
    }

    /** The agent's region as the test may address it remotely. */
    record Region(long address, int rkey, long length) {
    }

    /** A completion seen on the agent's side. */
    record Seen(long wrId, int status, int opcode, int byteLength, int immediate, boolean hasImmediate) {
    }

    static void write(DataOutputStream out, Setup s) throws IOException {
        out.writeInt(s.dataBytes());
        out.writeInt(s.receives());
        out.writeInt(s.receiveBytes());
        out.writeBoolean(s.sharedReceiveQueue());
    }

    static Setup readSetup(DataInputStream in) throws IOException {
        return new Setup(in.readInt(), in.readInt(), in.readInt(), in.readBoolean());
    }

    static void write(DataOutputStream out, QueuePairEndpoint e) throws IOException {
        out.writeInt(e.qpNumber());
        out.writeInt(e.psn());
        out.write(e.gid().bytes());
        out.writeInt(e.lid());
        out.writeInt(e.mtu().code());
    }

    static QueuePairEndpoint readEndpoint(DataInputStream in) throws IOException {
        int qpn = in.readInt();
        int psn = in.readInt();
        byte[] gid = new byte[Gid.BYTES];
        in.readFully(gid);
        int lid = in.readInt();
        return new QueuePairEndpoint(qpn, psn, Gid.of(gid), lid, Mtu.of(in.readInt()));
    }

    static void write(DataOutputStream out, Region r) throws IOException {
        out.writeLong(r.address());
        out.writeInt(r.rkey());
        out.writeLong(r.length());
    }

    static Region readRegion(DataInputStream in) throws IOException {
        return new Region(in.readLong(), in.readInt(), in.readLong());
    }

    static void write(DataOutputStream out, Seen s) throws IOException {
        out.writeLong(s.wrId());
        out.writeInt(s.status());
        out.writeInt(s.opcode());
        out.writeInt(s.byteLength());
        out.writeInt(s.immediate());
        out.writeBoolean(s.hasImmediate());
    }

    static Seen readSeen(DataInputStream in) throws IOException {
        return new Seen(in.readLong(), in.readInt(), in.readInt(), in.readInt(), in.readInt(), in.readBoolean());
    }
}
