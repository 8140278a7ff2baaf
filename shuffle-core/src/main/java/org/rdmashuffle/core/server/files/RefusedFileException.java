package org.rdmashuffle.core.server.files;

import java.io.IOException;

/**
 * A map-output file the serving side will not open: a symbolic link, not a regular file, owned by
 * someone other than the application's user, outside the application's directories, or an index too
 * large. The message is for the node's log (it names the path); a reducer is told only the kind.
 */
public final class RefusedFileException extends IOException {
    private static final long serialVersionUID = 1L;

    public RefusedFileException(String message) {
        super(message);
    }

    public RefusedFileException(String message, Throwable cause) {
        super(message, cause);
    }
}
