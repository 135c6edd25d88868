package bad

func (s *service) handleB() {}
