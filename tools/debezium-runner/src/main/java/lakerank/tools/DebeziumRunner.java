package lakerank.tools;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;

/**
 * Debezium's embedded engine writing each change event's value, as the JSON converter renders
 * it with its schema (the schema/payload wrapper), as one line into numbered files of an
 * output folder: {@code <prefix>-0001.jsonl}, {@code -0002}, ... (a tombstone is the line
 * {@code null}). Driven by scripts/record_debezium.py through standard input, one command a
 * line, each answered on standard output:
 *
 * <ul>
 *   <li>{@code rotate}: closes the current file and starts the next ({@code rotated NAME EVENTS});
 *   <li>{@code cut N}: after N more events, rotate by itself ({@code cut NAME EVENTS} when it does);
 *   <li>{@code hold}: from now on no event is marked processed, so no offset is committed
 *       ({@code holding});
 *   <li>{@code halt}: {@link Runtime#halt}: the process ends at once, no offset committed, so
 *       the next start re-sends every event since the last committed offset.
 * </ul>
 *
 * Otherwise every batch is marked processed and, with {@code offset.flush.interval.ms=0}, its
 * offsets committed (a file offset store) once it is written and flushed. Each batch written
 * is reported as {@code wrote NAME EVENTS}.
 *
 * <p>Arguments: the connector's properties file, the output folder, the first file's number
 * (a restart continues the numbering) and the files' prefix.
 */
public final class DebeziumRunner {

    private final Path outDir;
    private final String prefix;
    private final PrintStream control;
    private int fileNumber;
    private Writer writer;
    private String fileName;
    private int eventsInFile;
    private int cutAfter = -1;
    private boolean holding;

    private DebeziumRunner(Path outDir, String prefix, int firstFile, PrintStream control) {
        this.outDir = outDir;
        this.prefix = prefix;
        this.fileNumber = firstFile;
        this.control = control;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: DebeziumRunner CONNECTOR_PROPERTIES OUT_DIR FIRST_FILE_NUMBER PREFIX");
            System.exit(2);
        }
        Properties props = new Properties();
        try (var in = new FileInputStream(args[0])) {
            props.load(in);
        }
        // The recording's fixed choices: the JSON converter with schemas (the wrapper), offsets in
        // a file, committed after every batch that is marked processed.
        props.setProperty("converter.schemas.enable", "true");
        props.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
        props.setProperty("offset.flush.interval.ms", "0");
        Path outDir = Paths.get(args[1]);
        Files.createDirectories(outDir);
        // Standard output is the control channel: the engine's logs go to standard error.
        PrintStream control = new PrintStream(new FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        DebeziumRunner runner = new DebeziumRunner(outDir, args[3], Integer.parseInt(args[2]), control);
        runner.open();

        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class)
                .using(props)
                .notifying(runner::handleBatch)
                .using((success, message, error) -> {
                    runner.say("engine-stopped " + success + " " + message.replace('\n', ' '));
                    if (error != null) {
                        error.printStackTrace();
                    }
                })
                .build();
        ExecutorService executor = Executors.newSingleThreadExecutor();
        executor.execute(engine);
        runner.say("started");

        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = commands.readLine()) != null) {
            runner.command(line.trim());
        }
        // Standard input closed: a clean stop (offsets of what was marked are committed).
        engine.close();
        executor.shutdown();
        runner.close();
    }

    private synchronized void say(String message) {
        control.println(message);
        control.flush();
    }

    private synchronized void command(String command) throws IOException {
        if (command.equals("rotate")) {
            rotate("rotated");
        } else if (command.startsWith("cut ")) {
            cutAfter = Integer.parseInt(command.substring(4).trim());
            if (cutAfter == 0) {
                rotate("cut");
                cutAfter = -1;
            }
        } else if (command.equals("hold")) {
            holding = true;
            say("holding");
        } else if (command.equals("halt")) {
            control.println("halting");
            control.flush();
            Runtime.getRuntime().halt(0);
        } else if (!command.isEmpty()) {
            say("unknown-command " + command);
        }
    }

    private synchronized void handleBatch(List<ChangeEvent<String, String>> records,
                                          DebeziumEngine.RecordCommitter<ChangeEvent<String, String>> committer)
            throws InterruptedException {
        try {
            for (ChangeEvent<String, String> record : records) {
                String value = record.value();
                writer.write(value == null ? "null" : value);
                writer.write('\n');
                eventsInFile++;
                if (cutAfter > 0 && --cutAfter == 0) {
                    cutAfter = -1;
                    rotate("cut");
                }
            }
            writer.flush();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
        say("wrote " + fileName + " " + eventsInFile);
        if (!holding) {
            for (ChangeEvent<String, String> record : records) {
                committer.markProcessed(record);
            }
            committer.markBatchFinished();
        }
    }

    private void open() throws IOException {
        fileName = String.format("%s-%04d.jsonl", prefix, fileNumber);
        writer = new OutputStreamWriter(new FileOutputStream(outDir.resolve(fileName).toFile()), StandardCharsets.UTF_8);
        eventsInFile = 0;
    }

    private void close() throws IOException {
        writer.flush();
        writer.close();
    }

    private void rotate(String word) throws IOException {
        close();
        say(word + " " + fileName + " " + eventsInFile);
        fileNumber++;
        open();
    }
}
