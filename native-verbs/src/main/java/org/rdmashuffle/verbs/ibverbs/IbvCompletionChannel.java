package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.ffi.ibv_comp_channel;

/**
 * {@code struct ibv_comp_channel *}. Its fd is made non-blocking and waited on with poll(2), a
 * timeout and beside an eventfd that {@link #wakeUp} signals, so a thread sleeping here can always
 * be stopped, at once.
 */
final class IbvCompletionChannel implements CompletionChannel {
    private final IbvContext context;
    final MemorySegment channel;
    private final int fd;
    /** Signalled by {@link #wakeUp}; closed with the channel (under {@link #closed}'s lock). */
    private final int wakeFd;
    private final Map<Long, IbvCompletionQueue> queues = new ConcurrentHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    IbvCompletionChannel(IbvContext context, MemorySegment channel) {
        this.context = context;
        this.channel = channel.reinterpret(ibv_comp_channel.layout().byteSize());
        this.fd = ibv_comp_channel.fd(this.channel);
        Libc.setNonBlocking(fd);
        this.wakeFd = Libc.eventFd();
    }

    void register(IbvCompletionQueue cq) {
        queues.put(cq.cq.address(), cq);
    }

    void unregister(IbvCompletionQueue cq) {
        queues.remove(cq.cq.address());
    }

    @Override
    public CompletionQueue awaitEvent(Duration timeout) {
        if (closed.get()) {
            throw new IllegalStateException("completion channel is closed");
        }
        if (Libc.awaitReadable(fd, wakeFd, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis())) != Libc.Readable.FD) {
            return null; // timed out, or woken
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cqOut = arena.allocate(ValueLayout.ADDRESS);
            MemorySegment ctxOut = arena.allocate(ValueLayout.ADDRESS);
            int rc = Libibverbs.GET_CQ_EVENT.rawStatus(channel, cqOut, ctxOut);
            if (rc == Errno.EAGAIN) {
                return null; // another thread took it
            }
            if (rc != 0) {
                throw new VerbsException("ibv_get_cq_event", rc, null);
            }
            IbvCompletionQueue cq = queues.get(cqOut.get(ValueLayout.ADDRESS, 0).address());
            if (cq == null) {
                throw new VerbsException("ibv_get_cq_event", "event for a CQ this channel does not know");
            }
            cq.eventReceived();
            return cq;
        }
    }

    @Override
    public void wakeUp() {
        synchronized (closed) { // never a write to a closed (and perhaps reused) fd number
            if (!closed.get()) {
                Libc.signal(wakeFd);
            }
        }
    }

    @Override
    public int fd() {
        return fd;
    }

    @Override
    public void close() {
        synchronized (closed) {
            if (closed.get()) {
                return;
            }
            if (!queues.isEmpty()) {
                throw new IllegalStateException(queues.size() + " completion queue(s) still use this channel: close them first");
            }
            closed.set(true);
            Libc.close(wakeFd);
        }
        Libibverbs.DESTROY_COMP_CHANNEL.status(null, channel);
    }
}
