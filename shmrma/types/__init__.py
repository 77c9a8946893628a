"""What a message is made of: datatypes (predefined and derived, their type maps), the
one buffer parser, Pack/Unpack, reduction ops, statuses, the Sync handles, DLPack
buffers, MPI.buffer and MPI.pickle.
"""
