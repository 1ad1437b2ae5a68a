! Coarray Fortran through OpenCoarrays' MPI library: puts and gets of
! scalars, arrays and strided sections, co_sum/co_max/co_broadcast,
! sync all/sync images, locks, atomics, events, allocatable coarrays.
program caf
  use iso_fortran_env, only: lock_type, event_type, atomic_int_kind
  implicit none
  integer :: me, np, i, k, failures = 0, total
  integer :: a(10)[*]
  real(8) :: grid(4, 6)[*]
  integer, allocatable :: dyn(:)[:]
  integer :: counter[*]
  type(lock_type) :: lck[*]
  integer(atomic_int_kind) :: atom[*]
  integer(atomic_int_kind) :: old, got
  type(event_type) :: ev[*]
  integer :: s, b(3), strided(5)
  real(8) :: m

  me = this_image()
  np = num_images()

  ! Puts: each image writes its number into its right neighbour's a(me).
  a = 0
  sync all
  a(me)[mod(me, np) + 1] = me * 10
  sync all
  i = me - 1
  if (i == 0) i = np
  if (a(i) /= i * 10) call fail('put', a(i), i * 10)

  ! Gets: a whole array and a strided section from the left neighbour.
  a = [(me * 100 + k, k = 1, 10)]
  sync all
  b = a(2:6:2)[i]
  if (any(b /= [i * 100 + 2, i * 100 + 4, i * 100 + 6])) call fail('strided get', b(1), i * 100 + 2)
  strided = 0
  sync all
  ! Strided put into the right neighbour.
  a(1:9:2)[mod(me, np) + 1] = [(-me * 1000 - k, k = 1, 5)]
  sync all
  do s = 1, 5
    if (a(2 * s - 1) /= -i * 1000 - s) call fail('strided put', a(2 * s - 1), -i * 1000 - s)
    if (a(2 * s) /= me * 100 + 2 * s) call fail('strided put hole', a(2 * s), me * 100 + 2 * s)
  end do

  ! 2-D sections of real(8).
  grid = me
  sync all
  if (me == 1) then
    do s = 1, np
      grid(2:3, 2:5)[s] = s + 0.5d0
    end do
  end if
  sync all
  if (grid(2, 2) /= me + 0.5d0 .or. grid(3, 5) /= me + 0.5d0 .or. grid(1, 1) /= me .or. grid(4, 6) /= me) &
    call fail('2-D section put', int(grid(2, 2) * 10), (me * 10 + 5))

  ! Collectives.
  s = me
  call co_sum(s)
  if (s /= np * (np + 1) / 2) call fail('co_sum', s, np * (np + 1) / 2)
  m = dble(me)
  call co_max(m)
  if (m /= np) call fail('co_max', int(m), np)
  s = me
  call co_min(s, result_image=1)
  if (me == 1 .and. s /= 1) call fail('co_min', s, 1)
  b = 0
  if (me == np) b = [7, 8, 9]
  call co_broadcast(b, source_image=np)
  if (any(b /= [7, 8, 9])) call fail('co_broadcast', b(1), 7)

  ! Allocatable coarray.
  allocate (dyn(np)[*])
  dyn = 0
  sync all
  dyn(me)[1] = me * me
  sync all
  if (me == 1) then
    do s = 1, np
      if (dyn(s) /= s * s) call fail('allocatable put', dyn(s), s * s)
    end do
  end if
  deallocate (dyn)

  ! Locks: every image increments image 1's counter under its lock.
  counter = 0
  sync all
  do s = 1, 5
    lock (lck[1])
    counter[1] = counter[1] + 1
    unlock (lck[1])
  end do
  sync all
  if (me == 1 .and. counter /= 5 * np) call fail('lock counter', counter, 5 * np)

  ! Atomics.
  atom = 0
  sync all
  do s = 1, 3
    call atomic_add(atom[1], 1)
  end do
  call atomic_fetch_add(atom[1], 1, old)
  sync all
  call atomic_ref(got, atom[1])
  if (got /= 4 * np) call fail('atomic_add', int(got), 4 * np)
  if (me == 1) then
    call atomic_define(atom[np], 42)
  end if
  sync all
  call atomic_cas(atom[np], old, 42_atomic_int_kind, 43_atomic_int_kind)
  sync all
  call atomic_ref(got, atom[np])
  if (got /= 43) call fail('atomic_cas', int(got), 43)

  ! Events: each image posts to its right neighbour, waits for its own.
  event post (ev[mod(me, np) + 1])
  event wait (ev)

  ! sync images: a ring handshake.
  if (me > 1) sync images (me - 1)
  if (me < np) sync images (me + 1)

  total = failures
  call co_sum(total)
  if (me == 1) then
    if (total == 0) then
      print '(a,i0,a)', 'caf: all checks passed on ', np, ' images'
    else
      print '(a,i0,a)', 'caf: ', total, ' checks FAILED'
    end if
  end if
contains
  subroutine fail(what, got, want)
    character(*), intent(in) :: what
    integer, intent(in) :: got, want
    failures = failures + 1
    print '(a,i0,a,a,a,i0,a,i0)', 'FAIL image ', me, ': ', what, ' got ', got, ' want ', want
  end subroutine
end program
