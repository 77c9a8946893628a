"""MPI-IO (MPI-3.1 chapter 13): files and data representations.
"""
