/**
 * Opening the map-output files of applications the serving side does not trust: no symbolic link
 * followed, a FIFO never blocks, the very inode opened is checked (regular file, owner, inside the
 * application's directories), and index files are bounded before anything is allocated for them.
 * docs/security.md states what this protects against and what it does not.
 */
package org.rdmashuffle.core.server.files;
