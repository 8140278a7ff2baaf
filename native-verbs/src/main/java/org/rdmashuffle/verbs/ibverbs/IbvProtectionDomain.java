package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.MemoryWindowType;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.ProviderSupport;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.Trouble;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsException;

/** {@code struct ibv_pd *}. */
final class IbvProtectionDomain implements ProtectionDomain {
    final IbvContext context;
    final MemorySegment pd;
    private final AtomicBoolean closed = new AtomicBoolean();

    IbvProtectionDomain(IbvContext context, MemorySegment pd) {
        this.context = context;
        this.pd = pd;
    }

    @Override
    public VerbsContext context() {
        return context;
    }

    @Override
    public MemoryRegion register(MemorySegment memory, int access) {
        return register(memory, access, null);
    }

    /** Registers {@code memory}; the region closes {@code owned} (may be null) after deregistering. */
    private MemoryRegion register(MemorySegment memory, int access, Arena owned) {
        ensureOpen();
        ProviderSupport.checkRegistrable(memory);
        if ((access & Access.ON_DEMAND) != 0) {
            DeviceAttributes attrs = context.queryDevice();
            if (!attrs.supportsOnDemandPaging()) {
                throw new VerbsException("ibv_reg_mr", Errno.EOPNOTSUPP, context.device().name()
                        + " has no on-demand paging for RC reads (odp general_caps 0x" + Long.toHexString(attrs.odpGeneralCaps())
                        + ", rc_odp_caps 0x" + Integer.toHexString(attrs.odpRcCaps()) + "); register without ON_DEMAND");
            }
        }
        MemorySegment mr;
        String what = memory.byteSize() + " bytes at 0x" + Long.toHexString(memory.address()) + " " + Access.describe(access);
        try {
            // verbs.h's ibv_reg_mr macro: optional access bits need ibv_reg_mr_iova2 (iova = address).
            if ((access & Access.OPTIONAL_RANGE) == 0) {
                mr = Libibverbs.REG_MR.pointer(pd, memory, memory.byteSize(), access);
            } else {
                mr = Libibverbs.REG_MR_IOVA2.pointer(pd, memory, memory.byteSize(), memory.address(), access);
            }
        } catch (VerbsException e) {
            throw new VerbsException(e.call(), e.errno(), e.errno() == Errno.ENOMEM
                    ? Trouble.REGISTRATION_ENOMEM.line(what + " not registered: ENOMEM", "room under the memlock limit for "
                            + "what this process pins, or a device that pages on demand", "raise the memlock limit (ulimit -l,"
                            + " LimitMEMLOCK=, docs/kubernetes.md), or register less (fetchBufferMemory, registeredMemoryLimit), "
                            + "or onDemandPaging=true where the NIC has ODP")
                    : what + (e.errno() == Errno.EPERM ? " (is the memlock limit high enough? ulimit -l)" : ""));
        }
        return new IbvMemoryRegion(this, mr, memory, access, owned);
    }

    /** {@code IBV_ADVISE_MR_ADVICE_PREFETCH}: fault the range in for reads, asynchronously (no flags). */
    private static final int ADVICE_PREFETCH = 0;
    /** An SGE's length is 32 bits: a longer range goes as several. */
    private static final long MAX_SGE_BYTES = 1L << 30;

    @Override
    public boolean prefetch(MemoryRegion region, long offset, long length) {
        ProtectionDomain.super.prefetch(region, offset, length); // the checks
        ensureOpen();
        if (!(region instanceof IbvMemoryRegion r) || r.pd != this) {
            throw new IllegalArgumentException("region " + region.lkey() + " is not of this protection domain");
        }
        if (r.isClosed()) {
            throw new IllegalStateException("region " + region.lkey() + " is deregistered");
        }
        MemorySegment op = context.verbsContextWith(org.rdmashuffle.verbs.ffi.verbs_context.advise_mr$offset());
        if (op == null) {
            return false;
        }
        int sges = (int) ((length + MAX_SGE_BYTES - 1) / MAX_SGE_BYTES);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment list = arena.allocate(org.rdmashuffle.verbs.ffi.ibv_sge.layout(), Math.max(1, sges));
            for (int i = 0; i < sges; i++) {
                MemorySegment sge = org.rdmashuffle.verbs.ffi.ibv_sge.asSlice(list, i);
                long from = offset + i * MAX_SGE_BYTES;
                org.rdmashuffle.verbs.ffi.ibv_sge.addr(sge, region.address() + from);
                org.rdmashuffle.verbs.ffi.ibv_sge.length(sge, (int) Math.min(MAX_SGE_BYTES, offset + length - from));
                org.rdmashuffle.verbs.ffi.ibv_sge.lkey(sge, region.lkey());
            }
            int rc;
            try {
                rc = (int) Libibverbs.VCTX_ADVISE_MR.invokeExact(op, pd, ADVICE_PREFETCH, 0, list, sges);
            } catch (Throwable t) {
                throw new VerbsException("ibv_advise_mr", "downcall failed: " + t);
            }
            if (rc == Errno.EOPNOTSUPP || rc == Errno.ENOSYS) {
                return false;
            }
            if (rc != 0) {
                throw new VerbsException("ibv_advise_mr", rc, "prefetch of " + length + " bytes at offset " + offset
                        + " of region lkey " + region.lkey());
            }
            return true;
        }
    }

    @Override
    public MemoryRegion allocateAndRegister(long bytes, int access) {
        return ProviderSupport.allocateAndRegister(bytes, (memory, owner) -> register(memory, access, owner));
    }

    /**
     * Maps read-only when the access allows it. Kernels before 6.2 pin every registered page with
     * FOLL_WRITE|FOLL_FORCE, which a read-only shared file mapping refuses with EFAULT; there the
     * registration is retried on a read-write mapping (the channel must be open for writing). The
     * region's access flags are unchanged: peers still cannot write.
     */
    @Override
    public MemoryRegion registerFile(FileChannel file, long offset, long length, int access) {
        FileChannel.MapMode mode = ProviderSupport.mapModeFor(access);
        try {
            return registerMapping(file, mode, offset, length, access);
        } catch (VerbsException e) {
            if (mode == FileChannel.MapMode.READ_WRITE || e.errno() != Errno.EFAULT) {
                throw e;
            }
            try {
                return registerMapping(file, FileChannel.MapMode.READ_WRITE, offset, length, access);
            } catch (java.nio.channels.NonWritableChannelException notWritable) {
                throw new VerbsException(e.call(), e.errno(), "this kernel cannot register a read-only file mapping"
                        + " (Linux < 6.2 pins pages for write); open the file for reading and writing so a"
                        + " read-write mapping can be registered instead");
            }
        }
    }

    private MemoryRegion registerMapping(FileChannel file, FileChannel.MapMode mode, long offset, long length, int access) {
        return ProviderSupport.mapAndRegister(file, mode, offset, length, (memory, owner) -> register(memory, access, owner));
    }

    @Override
    public MemoryWindow allocateWindow(MemoryWindowType type) {
        ensureOpen();
        return IbvMemoryWindow.allocate(this, type);
    }

    @Override
    public SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge, int limit) {
        ensureOpen();
        return IbvSharedReceiveQueue.create(this, maxWr, maxSge, limit);
    }

    @Override
    public QueuePair createQueuePair(QueuePairConfig config) {
        ensureOpen();
        return IbvQueuePair.create(this, config);
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException("protection domain is closed");
        }
        context.ensureOpen();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            Libibverbs.DEALLOC_PD.status(null, pd);
        }
    }
}
