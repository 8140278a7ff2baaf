package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.ffi.ibv_async_event;
import org.rdmashuffle.verbs.ffi.ibv_context;
import org.rdmashuffle.verbs.ffi.ibv_device_attr;
import org.rdmashuffle.verbs.ffi.ibv_device_attr_ex;
import org.rdmashuffle.verbs.ffi.ibv_gid_entry;
import org.rdmashuffle.verbs.ffi.ibv_odp_caps;
import org.rdmashuffle.verbs.ffi.ibv_port_attr;
import org.rdmashuffle.verbs.ffi.verbs_context;

/** An open device, {@code struct ibv_context *}. */
final class IbvContext implements VerbsContext {
    /** verbs.h's __VERBS_ABI_IS_EXTENDED: ibv_context.abi_compat of a context embedded in a verbs_context. */
    private static final long VERBS_ABI_IS_EXTENDED = -1L;
    private static final int ENODATA = 61;

    private final IbvDevice device;
    final MemorySegment context;
    final ContextOps ops;
    private final int asyncFd;
    /** An eventfd polled beside {@link #asyncFd}: {@link #wakeAsyncEventWaiter} signals it. Guarded by itself against close. */
    private final int asyncWakeFd;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Objects of this context by native address, so async events name the Java object. */
    final Map<Long, Object> objects = new ConcurrentHashMap<>();
    private volatile DeviceAttributes attributes;

    IbvContext(IbvDevice device, MemorySegment context) {
        this.device = device;
        this.context = context.reinterpret(ibv_context.layout().byteSize());
        this.ops = ContextOps.read(this.context);
        this.asyncFd = ibv_context.async_fd(this.context);
        Libc.setNonBlocking(asyncFd);
        this.asyncWakeFd = Libc.eventFd();
    }

    @Override
    public VerbsDevice device() {
        return device;
    }

    /** verbs.h's verbs_get_ctx_op(): the extended context when it implements {@code op}, else null. */
    MemorySegment verbsContextWith(long opOffset) {
        if (ibv_context.abi_compat(context).address() != VERBS_ABI_IS_EXTENDED) {
            return null;
        }
        long size = verbs_context.layout().byteSize();
        long contextOffset = verbs_context.context$offset();
        MemorySegment vctx = MemorySegment.ofAddress(context.address() - contextOffset).reinterpret(size);
        long sz = verbs_context.sz(vctx);
        if (sz < size - opOffset) {
            return null;
        }
        MemorySegment op = vctx.get(ValueLayout.ADDRESS, opOffset);
        return op.equals(MemorySegment.NULL) ? null : op;
    }

    /** verbs.h's inline ibv_query_device_ex(), with its fallback to ibv_query_device. */
    @Override
    public DeviceAttributes queryDevice() {
        DeviceAttributes a = attributes;
        if (a != null) {
            return a;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ex = arena.allocate(ibv_device_attr_ex.layout());
            MemorySegment op = verbsContextWith(verbs_context.query_device_ex$offset());
            int rc = Errno.EOPNOTSUPP;
            if (op != null) {
                try {
                    rc = (int) Libibverbs.VCTX_QUERY_DEVICE_EX.invokeExact(op, context, MemorySegment.NULL, ex,
                            ibv_device_attr_ex.layout().byteSize());
                } catch (Throwable t) {
                    throw new VerbsException("ibv_query_device_ex", "downcall failed: " + t);
                }
            }
            if (rc == Errno.EOPNOTSUPP || rc == Errno.ENOSYS) {
                ex.fill((byte) 0);
                Libibverbs.QUERY_DEVICE.status(null, context, ibv_device_attr_ex.orig_attr(ex));
            } else if (rc != 0) {
                throw new VerbsException("ibv_query_device_ex", rc, device.name());
            }
            MemorySegment o = ibv_device_attr_ex.orig_attr(ex);
            MemorySegment odp = ibv_device_attr_ex.odp_caps(ex);
            a = new DeviceAttributes(
                    ibv_device_attr.fw_ver(o).getString(0),
                    Long.reverseBytes(ibv_device_attr.node_guid(o)),
                    ibv_device_attr.vendor_id(o),
                    ibv_device_attr.vendor_part_id(o),
                    ibv_device_attr.hw_ver(o),
                    ibv_device_attr.max_mr_size(o),
                    ibv_device_attr.max_qp(o),
                    ibv_device_attr.max_qp_wr(o),
                    ibv_device_attr.max_sge(o),
                    ibv_device_attr.max_sge_rd(o),
                    ibv_device_attr.max_cq(o),
                    ibv_device_attr.max_cqe(o),
                    ibv_device_attr.max_mr(o),
                    ibv_device_attr.max_pd(o),
                    ibv_device_attr.max_qp_rd_atom(o),
                    ibv_device_attr.max_qp_init_rd_atom(o),
                    DeviceAttributes.AtomicCapability.of(ibv_device_attr.atomic_cap(o)),
                    ibv_device_attr.max_srq(o),
                    ibv_device_attr.max_srq_wr(o),
                    ibv_device_attr.max_srq_sge(o),
                    Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(o)),
                    ibv_odp_caps.general_caps(odp),
                    ibv_odp_caps.per_transport_caps.rc_odp_caps(ibv_odp_caps.per_transport_caps(odp)),
                    ibv_device_attr.device_cap_flags(o),
                    ibv_device_attr_ex.device_cap_flags_ex(ex),
                    ibv_device_attr.max_mw(o));
            attributes = a;
            return a;
        }
    }

    /** verbs.h's ___ibv_query_port(): the extended query_port op, else the compat export. */
    @Override
    public PortAttributes queryPort(int portNumber) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_port_attr.layout());
            MemorySegment op = verbsContextWith(verbs_context.query_port$offset());
            if (op != null) {
                int rc;
                try {
                    rc = (int) Libibverbs.VCTX_QUERY_PORT.invokeExact(op, context, (byte) portNumber, attr,
                            ibv_port_attr.layout().byteSize());
                } catch (Throwable t) {
                    throw new VerbsException("ibv_query_port", "downcall failed: " + t);
                }
                if (rc != 0) {
                    throw new VerbsException("ibv_query_port", Math.abs(rc), device.name() + " port " + portNumber);
                }
            } else {
                Libibverbs.QUERY_PORT_COMPAT.status(device.name() + " port " + portNumber, context, (byte) portNumber, attr);
            }
            return new PortAttributes(
                    portNumber,
                    PortState.of(ibv_port_attr.state(attr)),
                    Byte.toUnsignedInt(ibv_port_attr.phys_state(attr)),
                    LinkLayer.of(Byte.toUnsignedInt(ibv_port_attr.link_layer(attr))),
                    Mtu.of(ibv_port_attr.max_mtu(attr)),
                    Mtu.of(ibv_port_attr.active_mtu(attr)),
                    ibv_port_attr.gid_tbl_len(attr),
                    Integer.toUnsignedLong(ibv_port_attr.max_msg_sz(attr)),
                    Short.toUnsignedInt(ibv_port_attr.lid(attr)),
                    Byte.toUnsignedInt(ibv_port_attr.active_width(attr)),
                    Byte.toUnsignedInt(ibv_port_attr.active_speed(attr)));
        }
    }

    @Override
    public GidEntry queryGid(int portNumber, int index) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment entry = arena.allocate(ibv_gid_entry.layout());
            if (Libibverbs.QUERY_GID_EX != null) {
                int rc = Libibverbs.QUERY_GID_EX.rawStatus(context, portNumber, index, entry, 0,
                        ibv_gid_entry.layout().byteSize());
                if (rc == ENODATA) {
                    return null; // an empty slot of the table
                }
                if (rc != 0) {
                    throw new VerbsException("ibv_query_gid_ex", rc, device.name() + " port " + portNumber + " index " + index);
                }
                byte[] raw = ibv_gid_entry.gid(entry).toArray(ValueLayout.JAVA_BYTE);
                Gid gid = Gid.of(raw);
                return gid.isZero() ? null : new GidEntry(portNumber, index, gid,
                        GidType.of(ibv_gid_entry.gid_type(entry)), ibv_gid_entry.ndev_ifindex(entry));
            }
            // rdma-core before v32: no GID types.
            MemorySegment gidSeg = arena.allocate(16);
            Libibverbs.QUERY_GID.status(device.name() + " port " + portNumber + " index " + index,
                    context, (byte) portNumber, index, gidSeg);
            Gid gid = Gid.of(gidSeg.toArray(ValueLayout.JAVA_BYTE));
            return gid.isZero() ? null : new GidEntry(portNumber, index, gid, GidType.UNKNOWN, 0);
        }
    }

    @Override
    public ProtectionDomain allocateProtectionDomain() {
        ensureOpen();
        return new IbvProtectionDomain(this, Libibverbs.ALLOC_PD.pointer(context));
    }

    @Override
    public CompletionChannel createCompletionChannel() {
        ensureOpen();
        return new IbvCompletionChannel(this, Libibverbs.CREATE_COMP_CHANNEL.pointer(context));
    }

    @Override
    public CompletionQueue createCompletionQueue(int minEntries, CompletionChannel channel, int vector) {
        ensureOpen();
        if (minEntries < 1) {
            throw new IllegalArgumentException("a CQ needs at least one entry: " + minEntries);
        }
        IbvCompletionChannel ch = channel == null ? null : (IbvCompletionChannel) channel;
        MemorySegment cq = Libibverbs.CREATE_CQ.pointer(context, minEntries, MemorySegment.NULL,
                ch == null ? MemorySegment.NULL : ch.channel, vector);
        IbvCompletionQueue result = new IbvCompletionQueue(this, cq, ch);
        if (ch != null) {
            ch.register(result);
        }
        objects.put(cq.address(), result);
        return result;
    }

    @Override
    public AsyncEvent awaitAsyncEvent(Duration timeout) {
        ensureOpen();
        if (Libc.awaitReadable(asyncFd, asyncWakeFd, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis())) != Libc.Readable.FD) {
            return null; // timed out, or woken
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment event = arena.allocate(ibv_async_event.layout());
            int rc = Libibverbs.GET_ASYNC_EVENT.rawStatus(context, event);
            if (rc == Errno.EAGAIN) {
                return null;
            }
            if (rc != 0) {
                throw new VerbsException("ibv_get_async_event", rc, device.name());
            }
            AsyncEvent.Type type = AsyncEvent.Type.of(ibv_async_event.event_type(event));
            MemorySegment element = ibv_async_event.element(event);
            Object source = null;
            int port = 0;
            switch (type) {
                case PORT_ACTIVE, PORT_ERR, LID_CHANGE, PKEY_CHANGE, SM_CHANGE, CLIENT_REREGISTER, GID_CHANGE ->
                        port = ibv_async_event.element.port_num(element);
                case DEVICE_FATAL, UNKNOWN -> { }
                default -> source = objects.get(element.get(ValueLayout.ADDRESS, 0).address());
            }
            Libibverbs.ACK_ASYNC_EVENT.plain(event);
            return new AsyncEvent(type, port, source);
        }
    }

    void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException("device context " + device.name() + " is closed");
        }
    }

    @Override
    public void wakeAsyncEventWaiter() {
        synchronized (closed) { // never a write to a closed (and perhaps reused) fd number
            if (!closed.get()) {
                Libc.signal(asyncWakeFd);
            }
        }
    }

    @Override
    public void close() {
        boolean closing;
        synchronized (closed) {
            closing = closed.compareAndSet(false, true);
            if (closing) {
                Libc.close(asyncWakeFd);
            }
        }
        if (closing) {
            Libibverbs.CLOSE_DEVICE.status(device.name(), context);
        }
    }

    @Override
    public String toString() {
        return "ibverbs:" + device.name();
    }
}
