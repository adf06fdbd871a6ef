// GATTModel: what a peripheral is, as plain values. No I/O, no C.
