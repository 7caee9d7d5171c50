"""What submissions, reads and operations all use to know where players stand: rank reads, the
hot boards' summary, pages in rank order, counting a board, and crowded slots' tie counters."""
