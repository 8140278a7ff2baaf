package org.rdmashuffle.verbs.software;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.MemoryWindowType;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.ProviderSupport;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsException;

/** A protection domain: regions, SRQs and QPs of one PD may be used together, and only together. */
final class SoftProtectionDomain implements ProtectionDomain {
    final SoftContext context;

    SoftProtectionDomain(SoftContext context) {
        this.context = context;
    }

    @Override
    public VerbsContext context() {
        return context;
    }

    @Override
    public MemoryRegion register(MemorySegment memory, int access) {
        return register(memory, access, null);
    }

    private MemoryRegion register(MemorySegment memory, int access, Arena owned) {
        return register(memory, access, owned, null, 0);
    }

    private MemoryRegion register(MemorySegment memory, int access, Arena owned, FileChannel file, long fileOffset) {
        context.ensureOpen();
        ProviderSupport.checkRegistrable(memory);
        if ((access & Access.ON_DEMAND) != 0) {
            throw new VerbsException("ibv_reg_mr", Errno.EOPNOTSUPP, context.device.name()
                    + " has no on-demand paging for RC reads (the software provider never pins memory anyway); register without ON_DEMAND");
        }
        if ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0 && (access & Access.LOCAL_WRITE) == 0) {
            throw new VerbsException("ibv_reg_mr", Errno.EINVAL, "remote write or atomic access needs LOCAL_WRITE too");
        }
        return context.register(this, memory, access, owned, file, fileOffset);
    }

    @Override
    public MemoryRegion allocateAndRegister(long bytes, int access) {
        return ProviderSupport.allocateAndRegister(bytes, (memory, owner) -> register(memory, access, owner));
    }

    /** Maps read-only unless writes are allowed; remote reads are served from the mapping itself. */
    @Override
    public MemoryRegion registerFile(FileChannel file, long offset, long length, int access) {
        return ProviderSupport.mapAndRegister(file, ProviderSupport.mapModeFor(access), offset, length,
                (memory, owner) -> register(memory, access, owner));
    }

    /**
     * With sendfile on ({@link SoftwareProvider.Config#sendfile()}), a region peers only read keeps the
     * file: reads of it are answered with {@code sendfile} from the page cache, not written from the
     * mapping. Otherwise, and for a writable region, the file is closed and reads are served from the
     * mapping, as any memory.
     */
    @Override
    public MemoryRegion registerOwnedFile(FileChannel file, long offset, long length, int access) {
        if (!context.device.sendsFiles() || (access & (Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0) {
            return ProtectionDomain.super.registerOwnedFile(file, offset, length, access);
        }
        try {
            return ProviderSupport.mapAndRegister(file, ProviderSupport.mapModeFor(access), offset, length,
                    (memory, owner) -> register(memory, access, owner, file, offset));
        } catch (RuntimeException e) {
            try {
                file.close();
            } catch (java.io.IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    @Override
    public MemoryWindow allocateWindow(MemoryWindowType type) {
        context.ensureOpen();
        return context.allocateWindow(this, type);
    }

    @Override
    public SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge, int limit) {
        context.ensureOpen();
        if (maxWr < 1 || maxWr > 1 << 20 || maxSge < 1 || maxSge > SoftContext.MAX_SGE) {
            throw new VerbsException("ibv_create_srq", Errno.EINVAL, "max_wr " + maxWr + ", max_sge " + maxSge);
        }
        return new SoftSharedReceiveQueue(this, maxWr, maxSge, limit);
    }

    @Override
    public QueuePair createQueuePair(QueuePairConfig config) {
        context.ensureOpen();
        return context.device.createQueuePair(this, config);
    }

    @Override
    public void close() {
    }
}
