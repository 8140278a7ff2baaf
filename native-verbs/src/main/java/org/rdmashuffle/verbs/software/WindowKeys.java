package org.rdmashuffle.verbs.software;

import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * A device's memory windows, by key and by handle. A window's key is bit 31 (regions' keys never
 * have it: {@link RegionKeys}), a random variant (bits 28-30, new for each window in a slot), the
 * slot's index (bits 8-27) and the low byte a bind chooses ({@code ibv_inc_rkey}), so a bind changes
 * only the low byte, as on an HCA. The handle, written into bind requests, is the index plus one.
 * Lookups read a volatile snapshot; changes are serialised.
 */
final class WindowKeys {
    static final int WINDOW_BIT = 1 << 31;
    static final int INDEX_BITS = 20;
    static final int MAX_WINDOWS = 1 << INDEX_BITS;
    private static final int INDEX_MASK = MAX_WINDOWS - 1;

    private final SecureRandom random;
    private volatile SoftMemoryWindow[] slots = new SoftMemoryWindow[16];
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private int used;

    WindowKeys(SecureRandom random) {
        this.random = random;
    }

    static boolean isWindowKey(int key) {
        return (key & WINDOW_BIT) != 0;
    }

    /** Enters a window made by {@code make} from its first key and handle; null when the table is full. */
    synchronized SoftMemoryWindow add(java.util.function.BiFunction<Integer, Long, SoftMemoryWindow> make) {
        int index;
        if (!free.isEmpty()) {
            index = free.poll();
        } else {
            if (used == MAX_WINDOWS) {
                return null;
            }
            index = used++;
            if (index >= slots.length) {
                slots = Arrays.copyOf(slots, Math.min(slots.length * 2, MAX_WINDOWS));
            }
        }
        int key = WINDOW_BIT | random.nextInt(8) << 28 | index << 8 | random.nextInt(256);
        SoftMemoryWindow mw = make.apply(key, index + 1L);
        SoftMemoryWindow[] s = slots;
        s[index] = mw;
        slots = s; // publish
        return mw;
    }

    synchronized void remove(SoftMemoryWindow mw) {
        int index = (int) (mw.handle() - 1);
        SoftMemoryWindow[] s = slots;
        if (index < s.length && s[index] == mw) {
            s[index] = null;
            slots = s;
            free.add(index);
        }
    }

    /** The window whose current key is {@code key}, or null. */
    SoftMemoryWindow byKey(int key) {
        if (!isWindowKey(key)) {
            return null;
        }
        SoftMemoryWindow mw = at(key >>> 8 & INDEX_MASK);
        return mw != null && mw.rkey() == key ? mw : null;
    }

    /** The window with this handle, or null. */
    SoftMemoryWindow byHandle(long handle) {
        return handle < 1 || handle > MAX_WINDOWS ? null : at((int) (handle - 1));
    }

    private SoftMemoryWindow at(int index) {
        SoftMemoryWindow[] s = slots;
        return index < s.length ? s[index] : null;
    }
}
