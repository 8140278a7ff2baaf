package org.rdmashuffle.verbs;

import java.nio.channels.FileChannel;

/**
 * A protection domain ({@code struct ibv_pd}): the memory regions, queue pairs and shared receive
 * queues made from it may be used together, and only together.
 */
public interface ProtectionDomain extends AutoCloseable {

    VerbsContext context();

    /**
     * Registers native memory the caller owns ({@code ibv_reg_mr}). The segment must outlive the
     * region. With {@link Access#ON_DEMAND} the device must support on-demand paging.
     */
    MemoryRegion register(java.lang.foreign.MemorySegment memory, int access);

    /** Allocates page-aligned native memory of {@code bytes} and registers it; the region owns it. */
    MemoryRegion allocateAndRegister(long bytes, int access);

    /**
     * Maps {@code length} bytes of a file from {@code offset} and registers the mapping; the region
     * owns the mapping and unmaps it on close. Lengths and offsets are longs: no 2 GiB limit. The
     * mapping is read-only unless {@code access} asks for local or remote writes.
     */
    MemoryRegion registerFile(FileChannel file, long offset, long length, int access);

    SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge, int limit);

    /** Creates a reliable-connected queue pair in the RESET state. */
    QueuePair createQueuePair(QueuePairConfig config);

    @Override
    void close();
}
