package org.rdmashuffle.core;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

import org.rdmashuffle.core.control.ControlClient;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsProvider;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * A reducer written by hand from verbs and the control plane, as an attacker would: it authenticates
 * for its own application (it holds that secret), then sends what it likes, posts receives or not,
 * and reads any (address, rkey) it has got hold of. One queue pair with its own receive queue. Public,
 * in this module's test jar: the hostile-tenant soak (benchmarks) attacks a service across hosts with it.
 */
public final class HostileReducer implements AutoCloseable {
    public static final int BUFFER = 32 << 10;
    private static final int RECEIVES = 8;
    private static final int SENDS = 16;
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final VerbsContext context;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final QueuePair qp;
    /** RECEIVES receive slots, SENDS send slots, then a landing area for reads. */
    private final MemoryRegion memory;
    private ControlClient control;
    private final SendWorkRequests sendWr = SendWorkRequests.allocate(1, 1);
    private final ReceiveWorkRequests recvWr = ReceiveWorkRequests.allocate(RECEIVES, 1);
    private final WorkCompletions wc = WorkCompletions.allocate(16);
    private final MessageCodec codec = new MessageCodec(BUFFER);
    private long nextWrId = 100;
    private boolean receivesPosted;
    /** The service's queue pair for ours: what a DISCONNECT names. */
    private int serverQpNumber;

    /** Authenticates for {@code app} at {@code service}'s control plane and connects one queue pair. */
    public HostileReducer(VerbsProvider provider, InetSocketAddress service, String app, byte[] secret) throws IOException {
        this(provider, service, app, secret, SENDS);
    }

    /**
     * As {@link #HostileReducer(VerbsProvider, InetSocketAddress, String, byte[])}, its send queue
     * {@code sendQueue} deep: it may have that many sends in flight (written into its 16 send slots in
     * turn, so a slot may be rewritten before its send goes: each holds a whole message either way).
     */
    public HostileReducer(VerbsProvider provider, InetSocketAddress service, String app, byte[] secret, int sendQueue)
            throws IOException {
        this(provider, service, app, secret, sendQueue, BUFFER);
    }

    /**
     * As above, its CONNECT naming a receive buffer of {@code namedReceiveBuffer} bytes whatever its
     * own are ({@link #BUFFER}): what a reducer says it can take is its own word.
     */
    public HostileReducer(VerbsProvider provider, InetSocketAddress service, String app, byte[] secret, int sendQueue,
                          int namedReceiveBuffer) throws IOException {
        String device = EngineTestSupport.usesDevice() ? System.getenv("SOFTROCE_DEVICE") : null;
        this.context = provider.devices().stream().filter(d -> device == null || d.name().equals(device)).findFirst()
                .orElseThrow().open();
        this.pd = context.allocateProtectionDomain();
        this.cq = context.createCompletionQueue(Math.max(64, 2 * sendQueue), null, 0);
        this.qp = pd.createQueuePair(QueuePairConfig.of(cq, sendQueue, RECEIVES, 1));
        this.memory = pd.allocateAndRegister((long) (RECEIVES + SENDS) * BUFFER + (1 << 20), Access.LOCAL_WRITE);
        PortAttributes port = context.queryPort(1);
        String gidEnv = System.getenv("SOFTROCE_GID_INDEX");
        int gid = EngineTestSupport.usesDevice() && gidEnv != null ? Integer.parseInt(gidEnv)
                : org.rdmashuffle.verbs.GidChoice.choose(context, port, null).index();
        ConnectOptions options = ConnectOptions.defaults(1, gid, port.activeMtu() == null ? Mtu.MTU_1024
                : Mtu.min(Mtu.MTU_4096, port.activeMtu())).withRemoteAccess(Access.REMOTE_READ).withRetry(14, 1);
        try {
            // From the address of our data listener, as an engine connects: a software-provider service dials only that.
            this.control = ControlClient.connect(service, secret, app, 64 << 10, WAIT,
                    provider.dataPathAddress(context));
            byte[] reply = control.call(ConnectCodec.CONNECT,
                    ConnectCodec.encode(new ConnectCodec.Connect(namedReceiveBuffer, List.of(qp.localEndpoint(options)))), WAIT);
            QueuePairEndpoint theirs = ConnectCodec.decode(reply).endpoints().getFirst();
            serverQpNumber = theirs.qpNumber();
            qp.connect(theirs, options);
        } catch (IOException | RuntimeException e) {
            close(); // refused: nothing of ours is left behind
            throw e;
        }
    }

    public int serverQpNumber() {
        return serverQpNumber;
    }

    /** Asks the service, on this reducer's control connection, to end the data connection of its queue pair {@code qpn}. */
    public void disconnect(int qpn) throws IOException {
        control.call(ConnectCodec.DISCONNECT, ConnectCodec.encodeDisconnect(qpn), WAIT);
    }

    public boolean controlOpen() {
        return control.isOpen();
    }

    /** Posts every receive slot, once (a reducer that never does this is an attack of its own). */
    public void postReceives() {
        if (receivesPosted) {
            return;
        }
        receivesPosted = true;
        for (int i = 0; i < RECEIVES; i++) {
            recvWr.set(i, i, memory, (long) i * BUFFER, BUFFER);
        }
        qp.postReceive(recvWr, RECEIVES);
    }

    /** SENDs {@code length} bytes of what {@code fill} wrote into the next send slot. */
    public void sendRaw(java.util.function.ToIntFunction<MemorySegment> fill) {
        long offset = (long) (RECEIVES + (int) (nextWrId % SENDS)) * BUFFER;
        int length = fill.applyAsInt(memory.segment().asSlice(offset, BUFFER));
        sendWr.get(0).reset().wrId(nextWrId++).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, memory, offset, length).sgeCount(1);
        qp.postSend(sendWr, 1);
    }

    /**
     * Sends {@code n} well-formed messages as fast as its send queue allows, never waiting for an
     * answer, and reposts each receive an answer used (so the service never sees RNR): a flood the
     * protocol allows. Returns the answers received meanwhile.
     */
    public int flood(int n, java.util.function.IntFunction<Message> message) throws IOException {
        return flood(n, message, m -> true);
    }

    /** As {@link #flood(int, java.util.function.IntFunction)}, counting only the answers {@code counted} accepts. */
    public int flood(int n, java.util.function.IntFunction<Message> message, java.util.function.Predicate<Message> counted)
            throws IOException {
        postReceives();
        int sent = 0;
        int outstanding = 0;
        int answers = 0;
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (sent < n || outstanding > 0) {
            if (System.nanoTime() > deadline) {
                throw new IOException("flood stalled after " + sent + " sends");
            }
            if (sent < n && outstanding < SENDS) {
                int k = sent++;
                sendRaw(slot -> codec.encode(message.apply(k), slot));
                outstanding++;
                continue;
            }
            int got = cq.poll(wc);
            for (int i = 0; i < got; i++) {
                if (!wc.isSuccess(i)) {
                    throw new IOException("the flood's " + wc.opcode(i) + " failed: " + wc.status(i));
                }
                if (wc.opcode(i) == org.rdmashuffle.verbs.WorkCompletionOpcode.RECV) {
                    long slot = wc.wrId(i);
                    answers += counted.test(codec.decode(memory.segment().asSlice(slot * BUFFER, wc.byteLength(i)),
                            wc.byteLength(i))) ? 1 : 0;
                    recvWr.set(0, slot, memory, slot * BUFFER, BUFFER);
                    qp.postReceive(recvWr, 1);
                } else {
                    outstanding--;
                }
            }
        }
        return answers;
    }

    /**
     * Takes the answers that keep coming (each receive posted again as it is used) until none came for
     * {@code quiet}; returns those that {@code counted} accepts. Posts the receives first if it never did.
     */
    public int takeAnswers(Duration quiet, java.util.function.Predicate<Message> counted) throws IOException {
        postReceives();
        int n = 0;
        long last = System.nanoTime();
        long deadline = last + WAIT.toNanos();
        while (System.nanoTime() - last < quiet.toNanos()) {
            if (System.nanoTime() > deadline) {
                throw new IOException("answers kept coming for " + WAIT);
            }
            int got = cq.poll(wc);
            for (int i = 0; i < got; i++) {
                if (wc.opcode(i) != org.rdmashuffle.verbs.WorkCompletionOpcode.RECV || !wc.isSuccess(i)) {
                    continue;
                }
                last = System.nanoTime();
                long slot = wc.wrId(i);
                Message m = codec.decode(memory.segment().asSlice(slot * BUFFER, wc.byteLength(i)), wc.byteLength(i));
                n += counted.test(m) ? 1 : 0;
                recvWr.set(0, slot, memory, slot * BUFFER, BUFFER);
                qp.postReceive(recvWr, 1);
            }
        }
        return n;
    }

    /**
     * Sends {@code n} messages, the {@code k}th written by {@code fill} into its slot, as fast as its send
     * queue allows, waiting only for its own sends to complete; posts no receive. Returns how many were
     * sent before one failed (the service closed the connection), or {@code n}.
     */
    public int sendPaced(int n, java.util.function.BiFunction<Integer, MemorySegment, Integer> fill) throws IOException {
        int sent = 0;
        int outstanding = 0;
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (sent < n || outstanding > 0) {
            if (System.nanoTime() > deadline) {
                throw new IOException("paced sends stalled after " + sent);
            }
            if (sent < n && outstanding < SENDS) {
                int k = sent++;
                sendRaw(slot -> fill.apply(k, slot));
                outstanding++;
                continue;
            }
            int got = cq.poll(wc);
            for (int i = 0; i < got; i++) {
                if (wc.opcode(i) == org.rdmashuffle.verbs.WorkCompletionOpcode.RECV) {
                    continue;
                }
                outstanding--;
                if (!wc.isSuccess(i)) {
                    return sent - outstanding - 1;
                }
            }
        }
        return sent;
    }

    /** Posts {@code n} SENDs of {@code m} at once, without waiting for any (the send queue must be that deep). */
    public void sendWithoutWaiting(int n, Message m) {
        for (int i = 0; i < n; i++) {
            sendRaw(slot -> codec.encode(m, slot));
        }
    }

    /** Sends {@code m} and returns the first message that comes back (its receive slot posted again). */
    public Message ask(Message m) throws IOException {
        sendRaw(slot -> codec.encode(m, slot));
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            int n = cq.poll(wc);
            for (int i = 0; i < n; i++) {
                if (wc.opcode(i) == org.rdmashuffle.verbs.WorkCompletionOpcode.RECV) {
                    if (!wc.isSuccess(i)) {
                        throw new IOException("receive failed: " + wc.status(i));
                    }
                    long slot = wc.wrId(i);
                    Message answer = codec.decode(memory.segment().asSlice(slot * BUFFER, wc.byteLength(i)), wc.byteLength(i));
                    recvWr.set(0, slot, memory, slot * BUFFER, BUFFER); // the slot is free again: asked again, answered again
                    qp.postReceive(recvWr, 1);
                    return answer;
                } else if (!wc.isSuccess(i)) {
                    throw new IOException("send failed: " + wc.status(i));
                }
            }
        }
        throw new IOException("no answer within " + WAIT);
    }

    /** The descriptors the service hands this reducer for {@code blocks} of shuffle {@code shuffle}. */
    public List<BlockDescriptor> describe(int shuffle, List<BlockId> blocks) throws IOException {
        Message answer = ask(new Message.FetchRequest(1, shuffle, blocks));
        if (answer instanceof Message.FetchResponse r) {
            return r.blocks();
        }
        throw new IOException("asked for descriptors, got " + answer);
    }

    /** RDMA_READs the block {@code d} names; returns the completion status (bytes in {@link #landed}). */
    WorkCompletionStatus read(BlockDescriptor d) throws IOException {
        long landing = (long) (RECEIVES + SENDS) * BUFFER;
        memory.segment().asSlice(landing, d.length()).fill((byte) 0);
        long id = nextWrId++;
        sendWr.get(0).rdmaRead(id, SendFlags.SIGNALED, memory, landing, (int) d.length(), d.address(), d.rkey());
        qp.postSend(sendWr, 1);
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            int n = cq.poll(wc);
            for (int i = 0; i < n; i++) {
                // Its own completion: an earlier SEND's may still be queued (its ACK can come after the answer).
                if (wc.wrId(i) == id && wc.opcode(i) != org.rdmashuffle.verbs.WorkCompletionOpcode.RECV) {
                    return wc.status(i);
                }
            }
        }
        throw new IOException("the read never completed");
    }

    /** The bytes the last read left. */
    byte[] landed(int length) {
        return memory.segment().asSlice((long) (RECEIVES + SENDS) * BUFFER, length).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }

    @Override
    public void close() {
        if (control != null) {
            control.close();
        }
        qp.close();
        memory.close();
        sendWr.close();
        recvWr.close();
        wc.close();
        cq.close();
        pd.close();
        context.close();
    }
}
