/* h5str.h — the string datasets of Nereus's HDF5 files (a checkpoint's
 * /meta/deck and /meta/plan, a trace's /deck) for readers outside src/io
 * (tools/trace.c): src/io/h5.c's reader, checksum check included. Needs
 * HDF5 (NEREUS_HAVE_HDF5). */
#ifndef NEREUS_H5STR_H
#define NEREUS_H5STR_H

#include <stddef.h>

#include <hdf5.h>

/* the scalar string dataset name under loc, malloc'd; NULL with why (naming path, the file) when it is
   missing, not a string, unreadable, or does not match its `checksum` attribute (a missing one is accepted:
   such a file is read unchecked) */
char *nr_h5_dset_str(hid_t loc, const char *path, const char *name, char *why, size_t len);

#endif
