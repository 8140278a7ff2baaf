package org.rdmashuffle.verbs;

/** errno names and texts for the values verbs calls report, without a call into libc. */
public final class Errno {
    public static final int EPERM = 1;
    public static final int ENOENT = 2;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EFAULT = 14;
    public static final int EBUSY = 16;
    public static final int ENODEV = 19;
    public static final int EINVAL = 22;
    public static final int ENOSPC = 28;
    public static final int ENOSYS = 38;
    public static final int ETIMEDOUT = 110;
    public static final int EOPNOTSUPP = 95;
    public static final int ECONNREFUSED = 111;
    public static final int ECONNRESET = 104;

    private Errno() {
    }

    public static String name(int errno) {
        return switch (errno) {
            case EPERM -> "EPERM";
            case ENOENT -> "ENOENT";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case EFAULT -> "EFAULT";
            case EBUSY -> "EBUSY";
            case ENODEV -> "ENODEV";
            case EINVAL -> "EINVAL";
            case ENOSPC -> "ENOSPC";
            case ENOSYS -> "ENOSYS";
            case EOPNOTSUPP -> "EOPNOTSUPP";
            case ECONNRESET -> "ECONNRESET";
            case ETIMEDOUT -> "ETIMEDOUT";
            case ECONNREFUSED -> "ECONNREFUSED";
            default -> "errno" + errno;
        };
    }

    public static String describe(int errno) {
        return switch (errno) {
            case EPERM -> "Operation not permitted";
            case ENOENT -> "No such file or directory";
            case EINTR -> "Interrupted system call";
            case EIO -> "Input/output error";
            case EAGAIN -> "Resource temporarily unavailable";
            case ENOMEM -> "Cannot allocate memory";
            case EACCES -> "Permission denied";
            case EFAULT -> "Bad address";
            case EBUSY -> "Device or resource busy";
            case ENODEV -> "No such device";
            case EINVAL -> "Invalid argument";
            case ENOSPC -> "No space left on device";
            case ENOSYS -> "Function not implemented";
            case EOPNOTSUPP -> "Operation not supported";
            case ECONNRESET -> "Connection reset by peer";
            case ETIMEDOUT -> "Connection timed out";
            case ECONNREFUSED -> "Connection refused";
            default -> "see errno(3)";
        };
    }
}
