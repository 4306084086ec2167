// Package files is the engine's file source and file destination: a folder
// watcher that turns the files dropped into a folder into batches of
// records, and a writer that puts one message into a file atomically.
//
// # The watcher
//
// A file source must never lose or double a record, even when the engine
// is killed halfway through a file of a million rows, and it must never
// read a file that is still being written. The watcher therefore works in
// small, verifiable steps:
//
//   - A file is ready when its size and modification time are unchanged
//     between two consecutive polls. Dot-files (the writer's temporary
//     files among them), sub-folders, anything but a regular file and names
//     not matching the pattern are ignored.
//   - Ready files are read oldest first (modification time, then name), one
//     at a time. A file that fails stops the poll, so later files wait and
//     the folder's order is kept.
//   - A file is streamed through format's Splitter (a bounded buffer, never
//     the whole file) and handed to the engine's Commit callback in batches
//     (500 records or 4 MiB by default). The engine stores each batch's
//     records together with the file's progress (size, time, byte offset,
//     counts, done) in one transaction, so the progress always describes
//     exactly the records stored.
//   - After a failed commit or a crash, the watcher asks the engine for the
//     saved progress and resumes at its offset when the file's size and time
//     are the ones saved; a file that changed is read from the start. A file
//     whose last batch was committed (Done) is not read again: only the move
//     or delete is finished. Re-reading the progress, rather than retrying
//     the batch in hand, also makes a commit whose outcome is unknown (the
//     connection dropped after COMMIT) safe: a stored batch shows in the
//     progress and is not sent twice.
//   - Only after the Done batch is stored is the file moved (or deleted);
//     the folders are fsynced, and then the engine is told (Finished) so it
//     can delete the progress row.
//
// Records the splitter refuses (too large, a CSV row that does not fit its
// header, HL7 lines outside a message) and files that cannot be read as
// their format at all are not dropped: they travel in the batch as
// Rejected entries, so the engine can store them as quarantined.
//
// # The writer
//
// Write puts a file destination's output in place with a temporary name,
// fsync and rename, so a reader of the folder sees the whole file or none
// of it, and Permanent tells the engine which failures are worth retrying.
package files
