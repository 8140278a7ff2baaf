package org.rdmashuffle.core.buffer;

/**
 * A binary buddy allocator over {@code 2^levels} units: blocks of {@code 2^order} units, each freed
 * block merged with its free buddy. Any free block of the needed order or larger serves a request,
 * whatever sizes the space served before, so no size can be starved by another's leftovers as fixed
 * size classes are. Bookkeeping is one byte per tree node: for each node, one plus the order of the
 * largest free block under it (0: none). Not thread-safe: its {@link RegisteredBufferPool} locks.
 */
final class BuddyAllocator {
    private final int levels;
    private final byte[] largestFree;

    BuddyAllocator(int levels) {
        if (levels < 0 || levels > 20) {
            throw new IllegalArgumentException("buddy allocator of 2^" + levels + " units");
        }
        this.levels = levels;
        this.largestFree = new byte[2 << levels];
        for (int node = 1; node < largestFree.length; node++) {
            largestFree[node] = (byte) (levels - depth(node) + 1);
        }
    }

    private static int depth(int node) {
        return 31 - Integer.numberOfLeadingZeros(node);
    }

    /** The largest order this allocator could serve now, or -1 if it is full. */
    int largestFreeOrder() {
        return largestFree[1] - 1;
    }

    boolean isEmpty() {
        return largestFree[1] == levels + 1;
    }

    /** The first unit of a free block of {@code 2^order} units, now taken; -1 if there is none. */
    int allocate(int order) {
        if (order < 0 || order > levels) {
            throw new IllegalArgumentException("order " + order + " of a 2^" + levels + "-unit allocator");
        }
        if (largestFree[1] < order + 1) {
            return -1;
        }
        int node = 1;
        for (int nodeOrder = levels; nodeOrder > order; nodeOrder--) {
            // The left child first: blocks pack towards the start, leaving large runs at the end.
            node = largestFree[2 * node] >= order + 1 ? 2 * node : 2 * node + 1;
        }
        largestFree[node] = 0;
        int unit = (node - (1 << (levels - order))) << order;
        update(node >> 1, order);
        return unit;
    }

    /** Gives back the block of {@code 2^order} units at {@code unit}, merging it with free buddies. */
    void free(int unit, int order) {
        int node = (1 << (levels - order)) + (unit >> order);
        if (largestFree[node] != 0) {
            throw new IllegalStateException("block of order " + order + " at unit " + unit + " is not allocated");
        }
        largestFree[node] = (byte) (order + 1);
        update(node >> 1, order);
    }

    /** Recomputes the nodes from {@code node} up; {@code childOrder} is the order of {@code node}'s children. */
    private void update(int node, int childOrder) {
        for (; node >= 1; node >>= 1, childOrder++) {
            byte left = largestFree[2 * node];
            byte right = largestFree[2 * node + 1];
            // Two wholly free buddies are one free block of the next order.
            largestFree[node] = left == childOrder + 1 && right == childOrder + 1 ? (byte) (childOrder + 2)
                    : (byte) Math.max(left, right);
        }
    }
}
