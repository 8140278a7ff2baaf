package org.rdmashuffle.verbs.crosshost;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Assumptions;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport;

/**
 * A test's connection to the {@link RemotePeerAgent} on the other host: our {@link PeerSide} on this
 * host's device, connected to the agent's, plus the agent's region ({@link #remote}) and commands to
 * fill it, show it, list the receives it completed, and have it send. Skips the test (with the
 * command to run) when no agent is configured: {@code -Drdmashuffle.test.remoteVerbsPeer=host:port},
 * {@code -Drdmashuffle.test.bindAddress} this host's address on the same wire.
 */
final class RemotePeer implements AutoCloseable {
    final PeerSide local;
    final PeerWire.Region remote;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;

    private RemotePeer(PeerSide local, PeerWire.Region remote, Socket socket, DataInputStream in, DataOutputStream out) {
        this.local = local;
        this.remote = remote;
        this.socket = socket;
        this.in = in;
        this.out = out;
    }

    /** This host's address on the wire to the other (the pair run sets it); skips the test without one. */
    static InetAddress bindAddress() throws IOException {
        String bind = System.getProperty("rdmashuffle.test.bindAddress");
        Assumptions.assumeTrue(bind != null && System.getProperty("rdmashuffle.test.remoteVerbsPeer") != null,
                "needs a wire to another host: run softroce/guest-tests.sh --pair");
        return InetAddress.getByName(bind);
    }

    /** Both ends made with {@code theirs} on the agent and {@code ours} here, and connected. */
    static RemotePeer connect(PeerWire.Setup theirs, PeerWire.Setup ours, boolean failFast) throws IOException {
        String agent = System.getProperty("rdmashuffle.test.remoteVerbsPeer");
        Assumptions.assumeTrue(agent != null, "needs the verbs agent on another host: run "
                + "softroce/guest-tests.sh --pair (two Soft-RoCE guests on one wire)");
        InetAddress bind = InetAddress.getByName(System.getProperty("rdmashuffle.test.bindAddress"));
        int colon = agent.lastIndexOf(':');
        Socket s = new Socket();
        PeerSide side = null;
        try {
            s.connect(new InetSocketAddress(agent.substring(0, colon), Integer.parseInt(agent.substring(colon + 1))), 30_000);
            s.setSoTimeout((int) VerbsTestSupport.TIMEOUT.toMillis() * 2);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            side = new PeerSide(VerbsTestSupport.target().device(), bind, ours, failFast,
                    org.rdmashuffle.verbs.SendOps.ALL_BUILDER_OPS);
            PeerWire.write(out, theirs);
            out.writeBoolean(failFast);
            PeerWire.write(out, side.qp.localEndpoint(side.options));
            out.flush();
            org.rdmashuffle.verbs.QueuePairEndpoint endpoint = PeerWire.readEndpoint(in);
            PeerWire.Region region = PeerWire.readRegion(in);
            side.qp.connect(endpoint, side.options);
            byte ready = in.readByte(); // EOF here: the agent could not connect its QP (its log says why)
            if (ready != PeerWire.CONNECTED) {
                throw new IOException("the agent answered " + ready + " instead of connecting");
            }
            return new RemotePeer(side, region, s, in, out);
        } catch (IOException | RuntimeException | Error e) {
            if (side != null) {
                side.close();
            }
            s.close();
            throw e;
        }
    }

    /** The agent fills its data with {@code new Random(seed)}'s bytes; returns them. */
    byte[] fill(long seed, int dataBytes) throws IOException {
        out.writeByte(PeerWire.FILL);
        out.writeLong(seed);
        out.flush();
        expectOk();
        byte[] data = new byte[dataBytes];
        new Random(seed).nextBytes(data);
        return data;
    }

    /** {@code length} bytes of the agent's region at {@code offset}. */
    byte[] dump(long offset, int length) throws IOException {
        out.writeByte(PeerWire.DUMP);
        out.writeLong(offset);
        out.writeInt(length);
        out.flush();
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return b;
    }

    /** The receives the agent completed, waiting up to the test timeout for {@code count}. */
    List<PeerWire.Seen> received(int count) throws IOException {
        out.writeByte(PeerWire.RECEIVED);
        out.writeInt(count);
        out.writeInt((int) VerbsTestSupport.TIMEOUT.toMillis());
        out.flush();
        int n = in.readInt();
        List<PeerWire.Seen> seen = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            seen.add(PeerWire.readSeen(in));
        }
        return seen;
    }

    /** Has the agent SEND_WITH_IMM {@code length} bytes of its data at {@code offset}; returns its completion status code. */
    int send(int offset, int length, int immediate) throws IOException {
        out.writeByte(PeerWire.SEND);
        out.writeInt(offset);
        out.writeInt(length);
        out.writeInt(immediate);
        out.flush();
        return in.readInt();
    }

    QueuePairState agentState() throws IOException {
        out.writeByte(PeerWire.STATE);
        out.flush();
        return QueuePairState.values()[in.readInt()];
    }

    private void expectOk() throws IOException {
        byte b = in.readByte();
        if (b != 'k') {
            throw new IOException("the agent answered " + b);
        }
    }

    @Override
    public void close() {
        try {
            out.writeByte(PeerWire.END);
            out.flush();
            expectOk(); // the agent closed its side: no packet of ours meets a destroyed QP there
        } catch (IOException e) {
            throw new UncheckedIOException("the agent did not end the test cleanly", e);
        } finally {
            local.close();
            try {
                socket.close();
            } catch (IOException ignored) {
                // nothing more to say to it
            }
        }
    }
}
