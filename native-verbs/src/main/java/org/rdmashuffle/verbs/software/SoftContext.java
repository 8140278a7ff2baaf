package org.rdmashuffle.verbs.software;

import java.lang.foreign.MemorySegment;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.GidEntry;
import org.rdmashuffle.verbs.GidType;
import org.rdmashuffle.verbs.LinkLayer;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.PortState;
import org.rdmashuffle.verbs.PostException;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsException;

/**
 * An open software device. Holds the key table every remote access is checked against: memory
 * regions by key ({@link RegionKeys}: an index and a variant that starts unpredictable), and its
 * memory windows ({@link WindowKeys}).
 */
final class SoftContext implements VerbsContext {
    static final int MAX_QP_WR = 16384;
    static final int MAX_SGE = 32;
    static final int MAX_INLINE = 1024;

    final SoftDevice device;
    private final SecureRandom random = new SecureRandom();
    private final RegionKeys regions = new RegionKeys(random);
    private final WindowKeys windows = new WindowKeys(random);
    private final LinkedBlockingQueue<AsyncEvent> events = new LinkedBlockingQueue<>();
    /** Not an event: what {@link #wakeAsyncEventWaiter} queues, so the waiter returns null. */
    private static final AsyncEvent WAKE_UP = new AsyncEvent(AsyncEvent.Type.UNKNOWN, 0, null);
    private final AtomicBoolean closed = new AtomicBoolean();

    SoftContext(SoftDevice device) {
        this.device = device;
    }

    @Override
    public VerbsDevice device() {
        return device;
    }

    @Override
    public DeviceAttributes queryDevice() {
        return new DeviceAttributes("software-1", device.guid(), 0, 0, 0, Long.MAX_VALUE, 1 << 16, MAX_QP_WR, MAX_SGE,
                MAX_SGE, 1 << 16, 1 << 22, 1 << 20, 1 << 16, 128, 128, DeviceAttributes.AtomicCapability.HCA,
                1 << 16, 1 << 20, MAX_SGE, 1, 0, 0,
                DeviceAttributes.DEVICE_MEM_WINDOW | DeviceAttributes.DEVICE_MEM_WINDOW_TYPE_2B, 0, WindowKeys.MAX_WINDOWS);
        // No ODP (nothing is pinned anyway), FLUSH (a write is visible when it completes) or atomic write.
    }

    @Override
    public PortAttributes queryPort(int portNumber) {
        if (portNumber != 1) {
            throw new VerbsException("ibv_query_port", Errno.EINVAL, device.name() + " has one port, not " + portNumber);
        }
        return new PortAttributes(1, PortState.ACTIVE, 5, LinkLayer.ETHERNET, Mtu.MTU_4096, Mtu.MTU_4096, 1,
                Integer.toUnsignedLong(Integer.MAX_VALUE), device.listener().port(), 0, 0);
    }

    /** One GID: the listener's IPv4 address, mapped, as RoCE v2 would show it. */
    @Override
    public GidEntry queryGid(int portNumber, int index) {
        queryPort(portNumber);
        if (index != 0) {
            return null;
        }
        return new GidEntry(1, 0, device.listener().gid(), GidType.ROCE_V2, 0);
    }

    @Override
    public ProtectionDomain allocateProtectionDomain() {
        ensureOpen();
        return new SoftProtectionDomain(this);
    }

    @Override
    public CompletionChannel createCompletionChannel() {
        ensureOpen();
        return new SoftCompletionChannel();
    }

    @Override
    public CompletionQueue createCompletionQueue(int minEntries, CompletionChannel channel, int vector) {
        ensureOpen();
        if (minEntries < 1) {
            throw new IllegalArgumentException("a CQ needs at least one entry: " + minEntries);
        }
        SoftCompletionChannel ch = (SoftCompletionChannel) channel;
        if (ch != null) {
            synchronized (ch) {
                ch.users++;
            }
        }
        return new SoftCompletionQueue(this, minEntries, ch);
    }

    @Override
    public AsyncEvent awaitAsyncEvent(Duration timeout) {
        try {
            AsyncEvent e = events.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return e == WAKE_UP ? null : e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    @Override
    public void wakeAsyncEventWaiter() {
        events.add(WAKE_UP);
    }

    void raise(AsyncEvent event) {
        events.add(event);
    }

    SoftMemoryRegion register(SoftProtectionDomain pd, MemorySegment memory, int access, java.lang.foreign.Arena owned,
                              java.nio.channels.FileChannel file, long fileOffset) {
        SoftMemoryRegion mr = regions.add(key -> new SoftMemoryRegion(pd, memory, key, access, owned, file, fileOffset));
        if (mr == null) {
            throw new VerbsException("ibv_reg_mr", Errno.ENOMEM, device.name() + " holds " + RegionKeys.MAX_REGIONS
                    + " memory regions already");
        }
        return mr;
    }

    SoftMemoryWindow allocateWindow(SoftProtectionDomain pd, org.rdmashuffle.verbs.MemoryWindowType type) {
        SoftMemoryWindow mw = windows.add((key, handle) -> new SoftMemoryWindow(pd, type, key, handle));
        if (mw == null) {
            throw new VerbsException("ibv_alloc_mw", Errno.ENOMEM, device.name() + " holds " + WindowKeys.MAX_WINDOWS
                    + " memory windows already");
        }
        return mw;
    }

    void removeWindow(SoftMemoryWindow mw) {
        windows.remove(mw);
    }

    /** The window whose key is {@code key} in {@code pd}, or null. */
    SoftMemoryWindow window(int key, SoftProtectionDomain pd) {
        SoftMemoryWindow mw = windows.byKey(key);
        return mw != null && mw.pd == pd ? mw : null;
    }

    /** The window a bind request names by {@code handle} in {@code pd}, or null. */
    SoftMemoryWindow windowByHandle(long handle, SoftProtectionDomain pd) {
        SoftMemoryWindow mw = windows.byHandle(handle);
        return mw != null && mw.pd == pd ? mw : null;
    }

    void deregister(SoftMemoryRegion mr) {
        regions.remove(mr);
    }

    /** The live region with this key in {@code pd}, or null: a wrong key and a foreign PD look the same. */
    SoftMemoryRegion region(int key, SoftProtectionDomain pd) {
        SoftMemoryRegion mr = regions.get(key);
        return mr != null && mr.pd == pd && !mr.isClosed() ? mr : null;
    }

    /** Resolves receive request {@code i} into registered memory; refuses the post if an SGE is not registered. */
    Receive receive(ReceiveWorkRequests requests, int i, int maxSge, String call, int count) {
        int n = requests.sgeCount(i);
        if (n > maxSge) {
            throw new PostException(call, Errno.EINVAL, i, requests.wrIdAt(i), count);
        }
        MemorySegment[] sges = new MemorySegment[n];
        long capacity = 0;
        for (int s = 0; s < n; s++) {
            SoftMemoryRegion mr = regions.get(requests.sgeLkey(i, s));
            MemorySegment slice = mr == null ? null : mr.slice(requests.sgeAddress(i, s), Integer.toUnsignedLong(requests.sgeLength(i, s)));
            if (slice == null || (mr.access() & org.rdmashuffle.verbs.Access.LOCAL_WRITE) == 0) {
                throw new PostException(call, Errno.EINVAL, i, requests.wrIdAt(i), count);
            }
            sges[s] = slice;
            capacity += slice.byteSize();
        }
        return new Receive(requests.wrIdAt(i), sges, capacity);
    }

    void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException("device context " + device.name() + " is closed");
        }
    }

    @Override
    public void close() {
        closed.set(true);
    }

    @Override
    public String toString() {
        return "software:" + device.name();
    }
}
