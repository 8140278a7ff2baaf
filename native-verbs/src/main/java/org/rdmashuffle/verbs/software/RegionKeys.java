package org.rdmashuffle.verbs.software;

import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * A device's memory regions by key, looked up on every request without allocating. A key is, as on
 * an HCA, an index into a table (low {@value #INDEX_BITS} bits) and a variant (the high bits): the
 * variant starts random and moves on each time the slot is reused, so a key that was deregistered
 * does not name the next region in its slot. Lookups read a volatile snapshot; changes are
 * serialised (registration is rare next to lookups).
 */
final class RegionKeys {
    static final int INDEX_BITS = 20;
    static final int MAX_REGIONS = 1 << INDEX_BITS;
    private static final int INDEX_MASK = (1 << INDEX_BITS) - 1;
    /** The variant's bits end below bit 31: a key with bit 31 set names a window ({@link WindowKeys}). */
    private static final int VARIANTS = 1 << (31 - INDEX_BITS);

    private final SecureRandom random;
    private volatile SoftMemoryRegion[] slots = new SoftMemoryRegion[64];
    /** The variant each slot's next key takes. */
    private int[] variants = new int[64];
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private int used;

    RegionKeys(SecureRandom random) {
        this.random = random;
    }

    /** Enters a region made by {@code make} from the key it gets; null when the table is full. */
    synchronized SoftMemoryRegion add(java.util.function.IntFunction<SoftMemoryRegion> make) {
        int index;
        if (!free.isEmpty()) {
            index = free.poll();
        } else {
            if (used > INDEX_MASK) {
                return null;
            }
            index = used++;
            if (index >= slots.length) {
                int n = Math.min(slots.length * 2, INDEX_MASK + 1);
                variants = Arrays.copyOf(variants, n);
                slots = Arrays.copyOf(slots, n);
            }
            variants[index] = random.nextInt(VARIANTS);
        }
        int variant = variants[index];
        variants[index] = (variant + 1) % VARIANTS;
        int key = variant << INDEX_BITS | index;
        if (key == 0) { // 0 is never a key: skip the variant
            key = (variant = 1) << INDEX_BITS;
            variants[index] = 2;
        }
        SoftMemoryRegion mr = make.apply(key);
        SoftMemoryRegion[] s = slots;
        s[index] = mr;
        slots = s; // publish
        return mr;
    }

    synchronized void remove(SoftMemoryRegion mr) {
        int index = mr.rkey() & INDEX_MASK;
        SoftMemoryRegion[] s = slots;
        if (index < s.length && s[index] == mr) {
            s[index] = null;
            slots = s;
            free.add(index);
        }
    }

    /** The region with this key, or null. */
    SoftMemoryRegion get(int key) {
        SoftMemoryRegion[] s = slots;
        int index = key & INDEX_MASK;
        SoftMemoryRegion mr = index < s.length ? s[index] : null;
        return mr != null && mr.rkey() == key ? mr : null;
    }
}
