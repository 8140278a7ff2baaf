package org.rdmashuffle.benchmarks.tpcds;

import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.trino.tpcds.Table;

/**
 * The TPC-DS query texts Spark ships in its {@code spark-sql_2.13} tests jar ({@code tpcds/q*.sql}),
 * in natural order (q1, q2, ..., q14a, q14b, ..., q99).
 */
public final class TpcdsQueries {
    private static final Pattern NAME = Pattern.compile("tpcds/(q(\\d+)([a-z]?))\\.sql");

    private TpcdsQueries() {
    }

    /** Every query by name. */
    public static Map<String, String> all() throws IOException {
        URL any = TpcdsQueries.class.getClassLoader().getResource("tpcds/q1.sql");
        if (any == null) {
            throw new IllegalStateException("tpcds/q1.sql is not on the classpath (the spark-sql_2.13 tests jar provides it)");
        }
        List<String[]> found = new ArrayList<>();
        JarFile jar = ((JarURLConnection) any.openConnection()).getJarFile();
        for (JarEntry e : Collections.list(jar.entries())) {
            Matcher m = NAME.matcher(e.getName());
            if (m.matches()) {
                found.add(new String[] {m.group(1), m.group(2), m.group(3), e.getName()});
            }
        }
        found.sort(Comparator.<String[]>comparingInt(f -> Integer.parseInt(f[1])).thenComparing(f -> f[2]));
        Map<String, String> queries = new LinkedHashMap<>();
        for (String[] f : found) {
            try (InputStream in = TpcdsQueries.class.getClassLoader().getResourceAsStream(f[3])) {
                queries.put(f[0], new String(in.readAllBytes(), StandardCharsets.UTF_8));
            }
        }
        return queries;
    }

    /** The queries named (comma-separated), or all for {@code all}. */
    public static Map<String, String> select(String names) throws IOException {
        Map<String, String> all = all();
        if (names.equals("all")) {
            return all;
        }
        Map<String, String> chosen = new LinkedHashMap<>();
        for (String n : names.split(",")) {
            String q = all.get(n.trim());
            if (q == null) {
                throw new IllegalArgumentException("no TPC-DS query " + n + " (have " + all.keySet() + ")");
            }
            chosen.put(n.trim(), q);
        }
        return chosen;
    }

    /** The tables these queries read: a table counts when its name appears as a word in a query. */
    public static List<Table> tablesUsed(Map<String, String> queries) {
        List<Table> used = new ArrayList<>();
        for (Table t : TpcdsData.tables()) {
            Pattern word = Pattern.compile("\\b" + t.getName() + "\\b");
            if (queries.values().stream().anyMatch(q -> word.matcher(q.toLowerCase(Locale.ROOT)).find())) {
                used.add(t);
            }
        }
        return used;
    }
}
