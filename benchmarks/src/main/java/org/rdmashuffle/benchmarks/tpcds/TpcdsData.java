package org.rdmashuffle.benchmarks.tpcds;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Date;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import io.trino.tpcds.Results;
import io.trino.tpcds.Session;
import io.trino.tpcds.Table;
import io.trino.tpcds.column.Column;
import io.trino.tpcds.column.ColumnType;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * TPC-DS tables generated without network access by the pure-Java generator ({@code
 * io.trino.tpcds}), driven through its library API in Spark tasks (one per chunk, so executors
 * generate in parallel), and stored once as Parquet under {@code <dir>/<table>}; a table whose
 * directory holds {@code _SUCCESS} is reused.
 */
public final class TpcdsData {
    private TpcdsData() {
    }

    /** Every table the queries read (the generator's base tables, without its own version table). */
    public static List<Table> tables() {
        return Table.getBaseTables().stream().filter(t -> !t.getName().equals("dbgen_version")).toList();
    }

    /** Generates the missing ones of {@code tables} at {@code scale}; returns how many it generated. */
    public static int generate(SparkSession spark, double scale, Path dir, List<Table> tables) throws Exception {
        int made = 0;
        for (Table t : tables) {
            Path out = dir.resolve(t.getName());
            if (Files.exists(out.resolve("_SUCCESS"))) {
                continue;
            }
            int chunks = t.isSmall() ? 1 : Math.max(2, (int) Math.ceil(scale * 8));
            String name = t.getName();
            JavaRDD<Row> rows = JavaSparkContext.fromSparkContext(spark.sparkContext())
                    .parallelize(IntStream.rangeClosed(1, chunks).boxed().toList(), chunks)
                    .flatMap(chunk -> {
                        Table table = Table.getTable(name);
                        Session s = Session.getDefaultSession().withScale(scale).withParallelism(chunks)
                                .withChunkNumber(chunk).withTable(table).withNoSexism(false);
                        Column[] columns = table.getColumns();
                        // Streamed, not collected: a chunk of a fact table at scale 1 is more than an executor's heap.
                        java.util.Iterator<List<List<String>>> generated = Results.constructResults(table, s).iterator();
                        return new java.util.Iterator<Row>() {
                            @Override
                            public boolean hasNext() {
                                return generated.hasNext();
                            }

                            @Override
                            public Row next() {
                                return toRow(columns, generated.next().get(0));
                            }
                        };
                    });
            spark.createDataFrame(rows, schema(t)).write().mode("overwrite").parquet(out.toString());
            made++;
        }
        return made;
    }

    /** Makes each generated table a temporary view of its name. */
    public static void register(SparkSession spark, Path dir) {
        for (Table t : tables()) {
            Path p = dir.resolve(t.getName());
            if (Files.exists(p.resolve("_SUCCESS"))) {
                spark.read().parquet(p.toString()).createOrReplaceTempView(t.getName());
            }
        }
    }

    /** Columns the generator names differently from the schema Spark's query texts use. */
    private static final java.util.Map<String, String> SPARK_NAMES = java.util.Map.of("c_last_review_date_sk", "c_last_review_date");

    static StructType schema(Table t) {
        List<StructField> fields = new ArrayList<>();
        for (Column c : t.getColumns()) {
            fields.add(DataTypes.createStructField(SPARK_NAMES.getOrDefault(c.getName(), c.getName()), sparkType(c.getType()), true));
        }
        return DataTypes.createStructType(fields);
    }

    private static DataType sparkType(ColumnType type) {
        return switch (type.getBase()) {
            case INTEGER -> DataTypes.IntegerType;
            case IDENTIFIER -> DataTypes.LongType;
            case DATE -> DataTypes.DateType;
            case DECIMAL -> DataTypes.createDecimalType(type.getPrecision().orElse(7), type.getScale().orElse(2));
            case VARCHAR, CHAR, TIME -> DataTypes.StringType;
        };
    }

    private static Row toRow(Column[] columns, List<String> values) {
        Object[] v = new Object[columns.length];
        for (int i = 0; i < columns.length; i++) {
            String s = values.get(i);
            if (s == null) {
                continue;
            }
            v[i] = switch (columns[i].getType().getBase()) {
                case INTEGER -> Integer.parseInt(s);
                case IDENTIFIER -> Long.parseLong(s);
                case DATE -> Date.valueOf(s);
                case DECIMAL -> new BigDecimal(s);
                case VARCHAR, CHAR, TIME -> s;
            };
        }
        return RowFactory.create(v);
    }
}
