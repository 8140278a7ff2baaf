package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The docs give tests as their evidence ("Tested: {@code FooTest.bar}"), and a test renamed or removed
 * leaves its citation pointing at nothing. Every citation of a test class ({@code FooTest}, {@code FooIT},
 * {@code FooFuzzTest}), alone or with a method ({@code FooTest.bar}, {@code FooTest#bar}, or a prefix:
 * {@code FooTest.bar...}), in README.md, docs/*.md, softroce/README.md and conf/README.md must name a
 * class that some module's src/test/java declares, and a method that class (or a test class it
 * extends) declares. A citation wrapped across two lines fails too: a Markdown renderer shows it with
 * a space in it. Host-only ({@code structure}): it reads the checkout.
 */
@Tag("structure")
class DocsCiteRealTestsTest {
    /**
     * A test class's name, optionally with {@code .method} or {@code #method} and a prefix mark. Not
     * preceded by an identifier character (part of a longer name), {@code @} (an annotation: Jazzer's
     * {@code @FuzzTest}), {@code *} (a glob: {@code *FuzzTest}) or {@code >} (a placeholder:
     * {@code <Name>FuzzTest}); the second character lower case, so that {@code EXIT} is no class.
     */
    private static final Pattern CITATION = Pattern.compile(
            "(?<![A-Za-z0-9_$@*>])([A-Z][a-z0-9][A-Za-z0-9]*(?:Test|IT))"
                    + "(?:[.#]([a-z][A-Za-z0-9_]*)(\\.\\.\\.|…|\\*)?)?(?![A-Za-z0-9_$*])");
    /** What follows a class name and a dot without being a method: {@code FooTest.java}. */
    private static final Set<String> FILE_EXTENSIONS = Set.of("java", "class", "xml", "txt", "log", "jar", "md");
    private static final Pattern DECLARATION = Pattern.compile("\\b(?:class|interface|record|enum)\\s+([A-Z]\\w*)");
    /** Words that may stand before {@code name(} without declaring it: {@code return name(...)}. */
    private static final Set<String> NOT_A_TYPE = Set.of("return", "new", "throw", "else", "yield", "case", "assert");

    private static Path root;
    private static TestSources sources;

    @BeforeAll
    static void readTheTestSources() throws IOException {
        // Surefire runs in the module's directory; its parent is the repository.
        Path module = Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath();
        root = module.getParent();
        assertTrue(Files.isRegularFile(root.resolve("README.md")) && Files.isDirectory(root.resolve("docs")),
                "expected the repository (README.md, docs/) above the module directory " + module);
        sources = TestSources.read(root);
    }

    @Test
    void everyTestTheDocsCite_isDeclaredUnderSomeModulesTestSources() throws IOException {
        List<Path> docs = new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("softroce/README.md"),
                root.resolve("conf/README.md")));
        try (Stream<Path> s = Files.list(root.resolve("docs"))) {
            s.filter(p -> p.getFileName().toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        int cited = 0;
        List<String> problems = new ArrayList<>();
        for (Path doc : docs) {
            assertTrue(Files.isRegularFile(doc), "a doc this test reads is missing: " + root.relativize(doc));
            List<Citation> citations = citations(root.relativize(doc).toString(), Files.readAllLines(doc));
            cited += citations.size();
            for (Citation c : citations) {
                String problem = sources.problem(c);
                if (problem != null) {
                    problems.add(c.where() + ": `" + c.text() + "`: " + problem);
                }
            }
        }
        assertTrue(cited > 0, "found no citation of a test in the docs: the pattern or the list of docs is wrong");
        assertTrue(problems.isEmpty(), problems.size() + " citation(s) of tests that do not exist:\n  "
                + String.join("\n  ", problems));
    }

    /** The check itself: it flags what does not exist and passes over what is no citation. */
    @Test
    void theCheckFlagsAMissingClassAndAMissingMethod_andPassesGlobsAnnotationsAndFileNames() {
        List<Citation> found = citations("example.md", List.of(
                "Tested: `DocsCiteRealTestsTest.everyTestTheDocsCite_isDeclaredUnderSomeModulesTestSources`,",
                "`DocsCiteRealTestsTest#theCheckFlagsAMissingClass...` and `DocsCiteRealTestsTest.*`;",
                "`NoSuchClassAnywhereTest`, `DocsCiteRealTestsTest.noSuchMethodAnywhere`, `YarnJarIT`,",
                "`DocsCiteRealTestsTest.everyTestTheDocsCite_isDeclared",
                "UnderSomeModulesTestSources` (wrapped), `LayeringTest.java`.",
                "Not citations: `*FuzzTest`, `@FuzzTest`, `<Name>FuzzTest`, `HostileTenant*Test`, EXIT, TestProviders."));
        List<String> seen = found.stream().map(c -> c.where() + " " + c.text()).toList();
        assertEquals(List.of(
                "example.md:1 DocsCiteRealTestsTest.everyTestTheDocsCite_isDeclaredUnderSomeModulesTestSources",
                "example.md:2 DocsCiteRealTestsTest#theCheckFlagsAMissingClass...",
                "example.md:2 DocsCiteRealTestsTest",
                "example.md:3 NoSuchClassAnywhereTest",
                "example.md:3 DocsCiteRealTestsTest.noSuchMethodAnywhere",
                "example.md:3 YarnJarIT",
                "example.md:4 DocsCiteRealTestsTest.everyTestTheDocsCite_isDeclared",
                "example.md:5 LayeringTest"), seen);
        List<String> flagged = found.stream().filter(c -> sources.problem(c) != null).map(Citation::text).toList();
        assertEquals(List.of("NoSuchClassAnywhereTest", "DocsCiteRealTestsTest.noSuchMethodAnywhere",
                "DocsCiteRealTestsTest.everyTestTheDocsCite_isDeclared"), flagged);
        assertTrue(sources.problem(found.get(3)).contains("no *.java under any module's src/test/java declares"),
                sources.problem(found.get(3)));
        assertFalse(sources.problem(found.get(4)).contains("wrapped"), sources.problem(found.get(4)));
        assertTrue(sources.problem(found.get(6)).contains("wrapped onto the next line"), sources.problem(found.get(6)));
        assertFalse(sources.declaringFiles("YarnJarIT").isEmpty(), "another module's test classes are read too");
    }

    /**
     * One citation: where it is, what it says, and what it names. {@code method} is null for a class alone;
     * {@code endsTheLine}: nothing but spaces follows it on its line (a name there may have been wrapped).
     */
    record Citation(String doc, int line, String text, String className, String method, boolean prefix,
                    boolean endsTheLine) {
        String where() {
            return doc + ":" + line;
        }
    }

    static List<Citation> citations(String doc, List<String> lines) {
        List<Citation> out = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            Matcher m = CITATION.matcher(line);
            while (m.find()) {
                String method = m.group(2);
                boolean endsTheLine = line.substring(m.end()).isBlank();
                if (method != null && FILE_EXTENSIONS.contains(method)) {
                    out.add(new Citation(doc, i + 1, m.group(1), m.group(1), null, false, false));
                } else {
                    out.add(new Citation(doc, i + 1, m.group(), m.group(1), method, m.group(3) != null, endsTheLine));
                }
            }
        }
        return out;
    }

    /** Every module's src/test/java, comments removed, and which files declare which class. */
    static final class TestSources {
        private final Map<Path, String> code = new HashMap<>();
        private final Map<String, List<Path>> declaredIn = new HashMap<>();
        private final Path root;

        private TestSources(Path root) {
            this.root = root;
        }

        static TestSources read(Path root) throws IOException {
            TestSources s = new TestSources(root);
            List<Path> testRoots;
            try (Stream<Path> modules = Files.list(root)) {
                testRoots = modules.map(m -> m.resolve("src/test/java")).filter(Files::isDirectory).sorted().toList();
            }
            assertFalse(testRoots.isEmpty(), "no module under " + root + " has src/test/java");
            for (Path testRoot : testRoots) {
                try (Stream<Path> files = Files.walk(testRoot)) {
                    files.filter(f -> f.toString().endsWith(".java")).forEach(f -> {
                        try {
                            String text = withoutComments(Files.readString(f));
                            s.code.put(f, text);
                            Matcher d = DECLARATION.matcher(text);
                            while (d.find()) {
                                s.declaredIn.computeIfAbsent(d.group(1), k -> new ArrayList<>()).add(f);
                            }
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    });
                }
            }
            return s;
        }

        List<Path> declaringFiles(String className) {
            return declaredIn.getOrDefault(className, List.of());
        }

        /** Null when the citation names what exists; else what is missing. */
        String problem(Citation c) {
            List<Path> files = declaringFiles(c.className());
            if (files.isEmpty()) {
                return "no *.java under any module's src/test/java declares class " + c.className();
            }
            if (c.method() == null || declares(c.className(), c.method(), c.prefix(), new HashSet<>())) {
                return null;
            }
            return c.className() + " (" + String.join(", ", files.stream().map(f -> root.relativize(f).toString()).toList())
                    + ") declares no method " + c.method() + (c.prefix() ? "..." : "")
                    + (c.endsTheLine() ? " (is the name wrapped onto the next line? a renderer shows it with a space)" : "");
        }

        /** Whether a file declaring {@code className}, or a test class it extends, declares the method. */
        private boolean declares(String className, String method, boolean prefix, Set<String> visited) {
            if (!visited.add(className)) {
                return false;
            }
            Pattern declaration = Pattern.compile("(\\w+|>|\\])\\s+" + Pattern.quote(method) + (prefix ? "\\w*" : "") + "\\s*\\(");
            Pattern extendsClause = Pattern.compile("\\bclass\\s+" + Pattern.quote(className)
                    + "(?:\\s*<[^{]*?>)?\\s+extends\\s+([A-Z]\\w*)");
            for (Path f : declaringFiles(className)) {
                String text = code.get(f);
                Matcher m = declaration.matcher(text);
                while (m.find()) {
                    if (!NOT_A_TYPE.contains(m.group(1))) {
                        return true;
                    }
                }
                Matcher e = extendsClause.matcher(text);
                if (e.find() && declares(e.group(1), method, prefix, visited)) {
                    return true;
                }
            }
            return false;
        }

        /**
         * Drops comments, so that a class or method named only in a comment does not count. String and
         * character literals (text blocks too) are kept whole: a slash and a star inside a string (a glob
         * of paths) open no comment.
         */
        static String withoutComments(String java) {
            StringBuilder out = new StringBuilder(java.length());
            int i = 0;
            int n = java.length();
            while (i < n) {
                char c = java.charAt(i);
                if (c == '/' && i + 1 < n && java.charAt(i + 1) == '/') {
                    while (i < n && java.charAt(i) != '\n') {
                        i++;
                    }
                } else if (c == '/' && i + 1 < n && java.charAt(i + 1) == '*') {
                    int end = java.indexOf("*/", i + 2);
                    i = end < 0 ? n : end + 2;
                    out.append(' ');
                } else if (c == '"' || c == '\'') {
                    String quote = c == '"' && java.startsWith("\"\"\"", i) ? "\"\"\"" : String.valueOf(c);
                    int j = i + quote.length();
                    while (j < n && !java.startsWith(quote, j)) {
                        j += java.charAt(j) == '\\' ? 2 : 1;
                    }
                    j = Math.min(n, j + quote.length());
                    out.append(java, i, j);
                    i = j;
                } else {
                    out.append(c);
                    i++;
                }
            }
            return out.toString();
        }
    }
}
