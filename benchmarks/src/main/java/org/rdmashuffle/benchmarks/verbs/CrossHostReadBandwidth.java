package org.rdmashuffle.benchmarks.verbs;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * {@link ReadBandwidth} with the source on another host, as {@code ib_read_bw} runs between two: the
 * serving side registers the source and waits; the reading side connects over TCP, swaps QP endpoints
 * and the region's (address, rkey), and reads exactly as ReadBandwidth does (same depth, chains, timed
 * pass after an untimed one). Each side sends from the GID of its own address ({@link GidChoice}).
 * For devices (libibverbs): the exchange carries no software-provider admission token.
 *
 * <pre>
 * CrossHostReadBandwidth serve BIND PORT BYTES         serves one reader, exits when it hangs up
 * CrossHostReadBandwidth read BIND PEER PORT SIZE ITERATIONS [DEPTH] [CHAIN]
 * </pre>
 */
public final class CrossHostReadBandwidth {
    private CrossHostReadBandwidth() {
    }

    /** One side's verbs objects: a QP on its own CQ and PD, and one region. Closes children first. */
    private static final class Side implements AutoCloseable {
        final VerbsContext context;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemoryRegion region;
        final ConnectOptions options;

        Side(InetAddress bind, long bytes, int sendDepth, int access) {
            context = VerbsBench.device().open();
            options = VerbsBench.options(context, GidChoice.choose(context, context.queryPort(1), bind).index());
            pd = context.allocateProtectionDomain();
            cq = context.createCompletionQueue(sendDepth, null, 0);
            qp = pd.createQueuePair(QueuePairConfig.of(cq, sendDepth, 1, 1));
            region = pd.allocateAndRegister(bytes, access);
        }

        /** Swaps endpoints over {@code s} (ours first) and connects. */
        QueuePairEndpoint exchange(DataOutputStream out, DataInputStream in) throws IOException {
            QueuePairEndpoint mine = qp.localEndpoint(options);
            out.writeInt(mine.qpNumber());
            out.writeInt(mine.psn());
            out.write(mine.gid().bytes());
            out.writeInt(mine.mtu().code());
            out.flush();
            int qpn = in.readInt();
            int psn = in.readInt();
            byte[] gid = new byte[Gid.BYTES];
            in.readFully(gid);
            QueuePairEndpoint theirs = new QueuePairEndpoint(qpn, psn, Gid.of(gid), 0, Mtu.of(in.readInt()));
            qp.connect(theirs, options);
            return theirs;
        }

        @Override
        public void close() {
            qp.close();
            region.close();
            cq.close();
            pd.close();
            context.close();
        }
    }

    public static void main(String[] args) throws IOException {
        switch (args[0]) {
            case "serve" -> serve(InetAddress.getByName(args[1]), Integer.parseInt(args[2]), Long.parseLong(args[3]));
            case "read" -> read(args);
            default -> throw new IllegalArgumentException("serve or read, not " + args[0]);
        }
    }

    private static void serve(InetAddress bind, int port, long bytes) throws IOException {
        try (Side side = new Side(bind, bytes, 4, Access.LOCAL_WRITE | Access.REMOTE_READ);
             ServerSocket server = new ServerSocket()) {
            side.region.segment().fill((byte) 0x5A);
            server.bind(new InetSocketAddress(bind, port));
            System.out.println("READY " + server.getLocalPort());
            System.out.flush();
            try (Socket s = server.accept()) {
                DataOutputStream out = new DataOutputStream(s.getOutputStream());
                DataInputStream in = new DataInputStream(s.getInputStream());
                side.exchange(out, in);
                out.writeLong(side.region.address());
                out.writeInt(side.region.rkey());
                out.flush();
                while (in.read() >= 0) {
                    // the reader hangs up when it is done
                }
            }
        }
    }

    private static void read(String[] args) throws IOException {
        InetAddress bind = InetAddress.getByName(args[1]);
        InetSocketAddress peer = new InetSocketAddress(args[2], Integer.parseInt(args[3]));
        int size = Integer.parseInt(args[4]);
        int iterations = Integer.parseInt(args[5]);
        int depth = args.length > 6 ? Integer.parseInt(args[6]) : 128;
        int chainLength = args.length > 7 ? Integer.parseInt(args[7]) : 16;
        try (Side side = new Side(bind, (long) size * depth, depth + 1, Access.LOCAL_WRITE);
             Socket s = new Socket()) {
            s.connect(peer, 60_000);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            DataInputStream in = new DataInputStream(s.getInputStream());
            side.exchange(out, in);
            long remote = in.readLong();
            int rkey = in.readInt();
            ReadBandwidth.measure(side.qp, side.cq, side.region, remote, rkey, size, iterations, depth, chainLength);
        }
    }
}
