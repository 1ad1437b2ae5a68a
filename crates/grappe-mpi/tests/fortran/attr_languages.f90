! Attributes across languages (MPI's rules for attributes set in one
! language and read in the other): an attribute Fortran sets holds its
! integer, which C reads through its address (a pointer to the integer),
! on communicators, datatypes and windows, and on a communicator's
! duplicate made by a Fortran copy callback; one C sets reads in Fortran
! as the pointer's value. C's functions are called from here through
! bind(C) interfaces (MPICH's Fortran handles are C's). Fortran copy and
! delete callbacks get the integers. Each failed check prints a FAIL line;
! rank 0 prints the verdict.
module languages
  use mpi
  use iso_c_binding
  implicit none
  integer :: failures = 0
  integer(kind=MPI_ADDRESS_KIND) :: deleted_value = -1
  interface
    integer(c_int) function c_comm_get_attr(comm, keyval, value, flag) bind(C, name='MPI_Comm_get_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: comm, keyval
      type(c_ptr) :: value
      integer(c_int) :: flag
    end function
    integer(c_int) function c_comm_set_attr(comm, keyval, value) bind(C, name='MPI_Comm_set_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: comm, keyval
      type(c_ptr), value :: value
    end function
    integer(c_int) function c_type_get_attr(datatype, keyval, value, flag) bind(C, name='MPI_Type_get_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: datatype, keyval
      type(c_ptr) :: value
      integer(c_int) :: flag
    end function
    integer(c_int) function c_win_get_attr(win, keyval, value, flag) bind(C, name='MPI_Win_get_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: win, keyval
      type(c_ptr) :: value
      integer(c_int) :: flag
    end function
  end interface
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a,a)', 'FAIL attr_languages.f90: ', what
    end if
  end subroutine

  ! What C reads, through the address it gets, of an attribute Fortran
  ! set; -1 if C finds none.
  integer(kind=MPI_ADDRESS_KIND) function through_address(value, flag)
    type(c_ptr), intent(in) :: value
    integer(c_int), intent(in) :: flag
    integer(kind=MPI_ADDRESS_KIND), pointer :: cell
    through_address = -1
    if (flag == 0 .or. .not. c_associated(value)) return
    call c_f_pointer(value, cell)
    through_address = cell
  end function

  subroutine add_one(comm, keyval, extra, value_in, value_out, flag, ierr)
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, value_in, value_out
    logical :: flag
    value_out = value_in + 1
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine

  subroutine note_deletion(comm, keyval, value, extra, ierr)
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: value, extra
    deleted_value = value
    ierr = MPI_SUCCESS
  end subroutine
end module

program attr_languages
  use languages
  implicit none
  integer :: ierr, rank, size, comm, dup, keyval, type_key, win_key, datatype, win
  integer(c_int) :: flag
  integer(kind=MPI_ADDRESS_KIND) :: value, extra, bytes
  logical :: found
  type(c_ptr) :: c_value
  integer :: window(4)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  extra = 0

  ! A communicator's attribute set in Fortran, read in C and copied.
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  call MPI_Comm_create_keyval(add_one, note_deletion, keyval, extra, ierr)
  value = 5555 + rank
  call MPI_Comm_set_attr(comm, keyval, value, ierr)
  ierr = c_comm_get_attr(comm, keyval, c_value, flag)
  call check(through_address(c_value, flag) == 5555 + rank, 'C reads a Fortran communicator attribute through its address')
  call MPI_Comm_dup(comm, dup, ierr)
  call MPI_Comm_get_attr(dup, keyval, value, found, ierr)
  call check(found .and. value == 5556 + rank, 'the Fortran copy callback gets and makes integers')
  ierr = c_comm_get_attr(dup, keyval, c_value, flag)
  call check(through_address(c_value, flag) == 5556 + rank, 'C reads the copy through its address')
  call MPI_Comm_free(dup, ierr)
  call check(deleted_value == 5556 + rank, 'the Fortran delete callback gets the integer')

  ! One C sets reads in Fortran as the pointer's value.
  ierr = c_comm_set_attr(comm, keyval, transfer(int(4096 + rank, c_intptr_t), c_value))
  call check(deleted_value == 5555 + rank, 'setting again deletes the Fortran value')
  call MPI_Comm_get_attr(comm, keyval, value, found, ierr)
  call check(found .and. value == 4096 + rank, 'Fortran reads a C attribute as the pointer''s value')
  call MPI_Comm_free(comm, ierr)
  call MPI_Comm_free_keyval(keyval, ierr)

  ! A datatype's.
  call MPI_Type_dup(MPI_INTEGER, datatype, ierr)
  call MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, type_key, extra, ierr)
  value = -77
  call MPI_Type_set_attr(datatype, type_key, value, ierr)
  ierr = c_type_get_attr(datatype, type_key, c_value, flag)
  call check(through_address(c_value, flag) == -77, 'C reads a Fortran datatype attribute through its address')
  call MPI_Type_get_attr(datatype, type_key, value, found, ierr)
  call check(found .and. value == -77, 'Fortran reads its own datatype attribute')
  call MPI_Type_free(datatype, ierr)
  call MPI_Type_free_keyval(type_key, ierr)

  ! A window's.
  bytes = 16
  call MPI_Win_create(window, bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, win_key, extra, ierr)
  value = 123456789
  call MPI_Win_set_attr(win, win_key, value, ierr)
  ierr = c_win_get_attr(win, win_key, c_value, flag)
  call check(through_address(c_value, flag) == 123456789, 'C reads a Fortran window attribute through its address')
  call MPI_Win_get_attr(win, win_key, value, found, ierr)
  call check(found .and. value == 123456789, 'Fortran reads its own window attribute')
  call MPI_Win_free(win, ierr)
  call MPI_Win_free_keyval(win_key, ierr)

  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. failures == 0) print '(a,i0,a)', 'fortran attributes across languages: all checks passed on ', &
       size, ' ranks'
  call MPI_Finalize(ierr)
  if (failures /= 0) call exit(1)
end program
